// What `tessera describe` reports about a platform, computed from its graph: device and link
// counts, bisection bandwidth, and the route between two GPUs with its bottleneck.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "platforms/routing.h"
#include "platforms/topology.h"

namespace tessera::platforms {

struct Inventory {
  std::map<std::string, uint64_t> devices;  // by kind name
  std::map<std::string, uint64_t> links;    // physical links (both directions) by kind name
};
Inventory inventory(const PlatformGraph& graph);

// Bisection bandwidth, bytes/s in one direction: the maximum flow from the GPUs of the first
// half of the nodes to those of the second half (with one node: the first half of its GPUs to
// the second), which is the capacity of the narrowest cut between the halves.
double bisection_bandwidth(const PlatformGraph& graph);

struct Hop {
  std::string from, to;     // device names ("node0.gpu0", "rail0.leaf0")
  std::string link_kind;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;     // link latency plus the pipeline latency of the device entered
  uint32_t port = 0;        // the port of `from` it leaves through (a gateway's: its uplink)
};
// The route chunk `chunk` of the transfer (source -> destination, flow 0) takes.
std::vector<Hop> route(const PlatformGraph& graph, const Routing& routing, uint32_t source,
                       uint32_t destination, uint32_t chunk = 0);

}  // namespace tessera::platforms
