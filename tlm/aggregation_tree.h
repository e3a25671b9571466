// An in-network reduction tree (InfiniBand SHARP's aggregation tree): the network switches a
// reduction crosses, each with the number of contributions it waits for (members cabled to
// it plus child switches), the port towards its parent and the ports down to its children.
// Chunks name their tree (FabricTransfer::tree); a switch finds its own vertex by its device
// index in the network graph. The platform builds trees from its topology
// (platforms/aggregation.h); nothing here changes while a simulation runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::protocol {

struct AggregationTree {
  struct Child {
    uint16_t port = 0;  // the switch's port towards the child
    int32_t rank = -1;  // a member (its result goes to this GPU), or -1: a child switch
  };
  struct Vertex {
    uint32_t device = 0;         // network graph device index of the switch
    uint32_t contributions = 0;  // what the switch adds up before its partial sum moves on
    int32_t parent_port = -1;    // -1: the root, which sends the sum down
    uint32_t first_child = 0;    // into `down`
    uint32_t children = 0;
  };

  uint32_t id = 0;               // tells apart the trees that share a switch
  std::vector<Vertex> vertices;  // sorted by device
  std::vector<Child> down;

  // The vertex of switch `device`, or nullptr when the tree does not cross it.
  const Vertex* at(uint32_t device) const {
    auto it = std::lower_bound(vertices.begin(), vertices.end(), device,
                               [](const Vertex& v, uint32_t d) { return v.device < d; });
    return it != vertices.end() && it->device == device ? &*it : nullptr;
  }
};

}  // namespace tessera::protocol
