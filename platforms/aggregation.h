// In-network reduction trees (InfiniBand SHARP): which network switches a reduction over a set
// of GPUs crosses, as SHARP's aggregation manager would set it up.
//
// A member contributes through its home gateway (Routing::home_gateway: its own NIC among the
// nearest) and that gateway's first uplink; the switch there is its leaf. The root is the
// switch with the fewest hops to the farthest leaf (the lowest index among equals); every other
// switch of the tree reaches the root by a shortest path, its parent being the neighbour one
// hop closer on its lowest port. Each switch of the tree waits for its members and child
// switches, then sends one partial sum to its parent; the root sends the sum back down.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "models/collectives/collective_engine.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tlm/aggregation_tree.h"

namespace tessera::platforms {

// The tree over GPUs `ranks` (global ranks, one contribution each). Throws PlatformError when a
// member has no network port or its port is not cabled to a switch.
protocol::AggregationTree aggregation_tree(const PlatformGraph& graph, const Routing& routing,
                                           const std::vector<int>& ranks, uint32_t id = 0);

// The platform's trees, built on first use and kept for the whole simulation (chunks point at
// them).
class AggregationTrees : public models::AggregationTrees {
 public:
  AggregationTrees(const PlatformGraph& graph, const Routing& routing)
      : graph_(graph), routing_(routing) {}
  const protocol::AggregationTree& tree(const std::vector<int>& ranks) override;

 private:
  const PlatformGraph& graph_;
  const Routing& routing_;
  std::map<std::vector<int>, std::unique_ptr<protocol::AggregationTree>> trees_;
};

}  // namespace tessera::platforms
