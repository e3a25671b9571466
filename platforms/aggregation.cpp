#include "platforms/aggregation.h"

#include <algorithm>
#include <deque>
#include <string>

namespace tessera::platforms {

namespace {

constexpr uint32_t kFar = 0xffffffffu;

// The port at the other end of `device`'s `port`.
uint32_t far_port(const Graph& g, uint32_t device, uint32_t port) {
  const GraphLink& l = g.links[g.devices[device].port_links[port]];
  return l.a == device && l.a_port == port ? l.b_port : l.a_port;
}

// Hop counts from `source` through network switches only (devices from `switches_from` on).
std::vector<uint32_t> hops_from(const Graph& g, uint32_t source, uint32_t switches_from) {
  std::vector<uint32_t> dist(g.devices.size(), kFar);
  std::deque<uint32_t> queue{source};
  dist[source] = 0;
  while (!queue.empty()) {
    const uint32_t u = queue.front();
    queue.pop_front();
    for (uint32_t p = 0; p < g.ports(u); ++p) {
      const uint32_t w = g.neighbor(u, p);
      if (w < switches_from || dist[w] != kFar) continue;
      dist[w] = dist[u] + 1;
      queue.push_back(w);
    }
  }
  return dist;
}

}  // namespace

protocol::AggregationTree aggregation_tree(const PlatformGraph& graph, const Routing& routing,
                                           const std::vector<int>& ranks, uint32_t id) {
  const Graph& g = graph.network.graph;
  const uint32_t gateways = graph.network.gateways;
  const uint32_t per_node = graph.gateways_per_node();
  const uint32_t gpus = graph.node.gpus;

  // Each member's leaf switch and the leaf's port towards the member's gateway.
  struct Member {
    int rank;
    uint32_t leaf, port;
  };
  std::vector<Member> members;
  std::vector<uint32_t> leaves;
  for (int rank : ranks) {
    const uint32_t r = static_cast<uint32_t>(rank);
    const int32_t home = r / gpus < graph.nodes ? routing.home_gateway(r % gpus) : -1;
    if (home < 0)
      throw PlatformError("network.in_network_reduction",
                          "GPU " + std::to_string(rank) + " has no network port for in-network reduction");
    const uint32_t gateway = (r / gpus) * per_node + static_cast<uint32_t>(home);
    if (g.ports(gateway) == 0 || g.neighbor(gateway, 0) < gateways)
      throw PlatformError("network.in_network_reduction",
                          g.devices[gateway].name + " is not cabled to a network switch");
    members.push_back({rank, g.neighbor(gateway, 0), far_port(g, gateway, 0)});
    leaves.push_back(members.back().leaf);
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());

  // The root: fewest hops to the farthest leaf.
  std::vector<uint32_t> farthest(g.devices.size(), 0);
  for (uint32_t leaf : leaves) {
    const std::vector<uint32_t> dist = hops_from(g, leaf, gateways);
    for (uint32_t x = gateways; x < g.devices.size(); ++x) farthest[x] = std::max(farthest[x], dist[x]);
  }
  uint32_t root = leaves.empty() ? gateways : leaves.front();
  for (uint32_t x = gateways; x < g.devices.size(); ++x)
    if (farthest[x] < farthest[root]) root = x;
  if (farthest[root] == kFar)
    throw PlatformError("network.in_network_reduction", "the members' switches are not connected");

  // Parents towards the root; the tree is the union of the leaves' paths.
  const std::vector<uint32_t> depth = hops_from(g, root, gateways);
  std::map<uint32_t, int32_t> parent_port;  // tree switch -> port to its parent (-1: root)
  for (uint32_t leaf : leaves)
    for (uint32_t x = leaf; !parent_port.count(x);) {
      if (x == root) {
        parent_port[x] = -1;
        break;
      }
      uint32_t p = 0;
      while (depth[g.neighbor(x, p)] != depth[x] - 1 || g.neighbor(x, p) < gateways) ++p;
      parent_port[x] = static_cast<int32_t>(p);
      x = g.neighbor(x, p);
    }

  protocol::AggregationTree tree;
  tree.id = id;
  for (const auto& [x, up] : parent_port) {
    protocol::AggregationTree::Vertex v;
    v.device = x;
    v.parent_port = up;
    v.first_child = static_cast<uint32_t>(tree.down.size());
    for (const auto& [child, child_up] : parent_port)
      if (child_up >= 0 && g.neighbor(child, uint32_t(child_up)) == x)
        tree.down.push_back({static_cast<uint16_t>(far_port(g, child, uint32_t(child_up))), -1});
    for (const Member& m : members)
      if (m.leaf == x) tree.down.push_back({static_cast<uint16_t>(m.port), m.rank});
    v.children = static_cast<uint32_t>(tree.down.size()) - v.first_child;
    v.contributions = v.children;
    tree.vertices.push_back(v);  // in device order (the map's)
  }
  return tree;
}

const protocol::AggregationTree& AggregationTrees::tree(const std::vector<int>& ranks) {
  std::unique_ptr<protocol::AggregationTree>& t = trees_[ranks];
  if (!t)
    t = std::make_unique<protocol::AggregationTree>(
        aggregation_tree(graph_, routing_, ranks, static_cast<uint32_t>(trees_.size() - 1)));
  return *t;
}

}  // namespace tessera::platforms
