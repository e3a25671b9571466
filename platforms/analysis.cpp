#include "platforms/analysis.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>

namespace tessera::platforms {

Inventory inventory(const PlatformGraph& graph) {
  Inventory inv;
  const NodeTemplate& nt = graph.node;
  // A striped NVSwitch crossbar counts as its chips, and each of its links as one per chip.
  for (const GraphDevice& d : nt.graph.devices) inv.devices[device_kind_name(d.kind)] += uint64_t(graph.nodes) * d.chips;
  for (const GraphLink& l : nt.graph.links)
    inv.links[link_kind_name(l.kind)] +=
        uint64_t(graph.nodes) * std::max(nt.graph.devices[l.a].chips, nt.graph.devices[l.b].chips);
  const Graph& net = graph.network.graph;
  for (uint32_t x = graph.network.gateways; x < net.devices.size(); ++x)
    inv.devices[device_kind_name(net.devices[x].kind)] += 1;
  for (const GraphLink& l : net.links) inv.links[link_kind_name(l.kind)] += 1;
  return inv;
}

namespace {

// Dinic's maximum flow on a directed graph with double capacities.
class MaxFlow {
 public:
  explicit MaxFlow(size_t vertices) : head_(vertices, -1), level_(vertices), next_(vertices) {}
  void arc(uint32_t from, uint32_t to, double capacity) {
    arcs_.push_back({to, head_[from], capacity});
    head_[from] = static_cast<int32_t>(arcs_.size() - 1);
    arcs_.push_back({from, head_[to], 0.0});
    head_[to] = static_cast<int32_t>(arcs_.size() - 1);
  }
  double run(uint32_t s, uint32_t t) {
    double total = 0;
    while (levels(s, t)) {
      next_ = head_;
      while (true) {
        const double f = push(s, t, std::numeric_limits<double>::infinity());
        if (f <= 0) break;
        total += f;
      }
    }
    return total;
  }

 private:
  struct Arc {
    uint32_t to;
    int32_t next;
    double capacity;
  };
  bool levels(uint32_t s, uint32_t t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<uint32_t> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      const uint32_t u = q.front();
      q.pop();
      for (int32_t a = head_[u]; a >= 0; a = arcs_[a].next)
        if (arcs_[a].capacity > kEpsilon && level_[arcs_[a].to] < 0) {
          level_[arcs_[a].to] = level_[u] + 1;
          q.push(arcs_[a].to);
        }
    }
    return level_[t] >= 0;
  }
  // Iterative augmenting path along the level graph.
  double push(uint32_t s, uint32_t t, double limit) {
    std::vector<int32_t> path;
    uint32_t u = s;
    while (true) {
      if (u == t) {
        double f = limit;
        for (int32_t a : path) f = std::min(f, arcs_[a].capacity);
        for (int32_t a : path) {
          arcs_[a].capacity -= f;
          arcs_[a ^ 1].capacity += f;
        }
        return f;
      }
      int32_t& a = next_[u];
      while (a >= 0 && !(arcs_[a].capacity > kEpsilon && level_[arcs_[a].to] == level_[u] + 1))
        a = arcs_[a].next;
      if (a >= 0) {
        path.push_back(a);
        u = arcs_[a].to;
        continue;
      }
      if (path.empty()) return 0;
      // Dead end: retreat and skip the arc that led here.
      level_[u] = -1;
      const int32_t back = path.back();
      path.pop_back();
      u = arcs_[back ^ 1].to;
      next_[u] = arcs_[next_[u]].next;
    }
  }
  static constexpr double kEpsilon = 1e-3;
  std::vector<Arc> arcs_;
  std::vector<int32_t> head_;
  std::vector<int32_t> level_;
  std::vector<int32_t> next_;
};

}  // namespace

double bisection_bandwidth(const PlatformGraph& graph) {
  const NodeTemplate& nt = graph.node;
  const Graph& ng = nt.graph;
  const Network& net = graph.network;
  const uint32_t per_node = static_cast<uint32_t>(ng.devices.size());
  const uint32_t nodes = graph.nodes;
  const uint32_t node_vertices = nodes * per_node;
  const uint32_t source = node_vertices + static_cast<uint32_t>(net.graph.devices.size());
  const uint32_t sink = source + 1;
  MaxFlow flow(sink + 1);
  auto node_vertex = [&](uint32_t n, uint32_t v) { return n * per_node + v; };
  for (uint32_t n = 0; n < nodes; ++n)
    for (const GraphLink& l : ng.links) {
      flow.arc(node_vertex(n, l.a), node_vertex(n, l.b), l.timing.bandwidth_bytes_per_s);
      flow.arc(node_vertex(n, l.b), node_vertex(n, l.a), l.timing.bandwidth_bytes_per_s);
    }
  // Network device x: a gateway is its node's device; a switch has a vertex of its own.
  const uint32_t per_gateway = graph.gateways_per_node();
  auto net_vertex = [&](uint32_t x) {
    if (x < net.gateways) return node_vertex(x / per_gateway, nt.gateways[x % per_gateway]);
    return node_vertices + x;
  };
  for (const GraphLink& l : net.graph.links) {
    flow.arc(net_vertex(l.a), net_vertex(l.b), l.timing.bandwidth_bytes_per_s);
    flow.arc(net_vertex(l.b), net_vertex(l.a), l.timing.bandwidth_bytes_per_s);
  }
  const double unbounded = 1e30;
  if (nodes > 1) {
    for (uint32_t n = 0; n < nodes; ++n)
      for (uint32_t g = 0; g < nt.gpus; ++g) {
        if (n < nodes / 2) flow.arc(source, node_vertex(n, g), unbounded);
        else if (n >= nodes - nodes / 2) flow.arc(node_vertex(n, g), sink, unbounded);
      }
  } else {
    for (uint32_t g = 0; g < nt.gpus; ++g) {
      if (g < nt.gpus / 2) flow.arc(source, g, unbounded);
      else if (g >= nt.gpus - nt.gpus / 2) flow.arc(g, sink, unbounded);
    }
  }
  return flow.run(source, sink);
}

std::vector<Hop> route(const PlatformGraph& graph, const Routing& routing, uint32_t source,
                       uint32_t destination, uint32_t chunk) {
  const NodeTemplate& nt = graph.node;
  const Graph& ng = nt.graph;
  const Network& net = graph.network;
  if (source >= graph.gpu_count() || destination >= graph.gpu_count())
    throw std::invalid_argument("GPU " + std::to_string(std::max(source, destination)) +
                                " does not exist (the platform has " + std::to_string(graph.gpu_count()) +
                                " GPUs)");
  protocol::FabricTransfer t;
  t.source = source;
  t.destination = destination;
  t.chunk = chunk;
  std::vector<Hop> hops;
  auto name = [&](bool network, uint32_t node, uint32_t device) {
    return network ? net.graph.devices[device].name : "node" + std::to_string(node) + "." + ng.devices[device].name;
  };
  routing.walk(t, [&](const Routing::Step& s) {
    const Graph& g = s.network ? net.graph : ng;
    const GraphLink& l = g.links[g.devices[s.device].port_links[s.port]];
    const uint32_t w = g.neighbor(s.device, s.port);
    // The pipeline of the device entered (a GPU has none).
    const double device_latency_ns =
        s.network ? net.graph.devices[w].latency_ns : (w >= nt.gpus ? ng.devices[w].latency_ns : 0.0);
    hops.push_back({name(s.network, s.node, s.device), name(s.network, s.node, w), link_kind_name(l.kind),
                    l.timing.bandwidth_bytes_per_s, l.timing.latency.to_seconds() + device_latency_ns * 1e-9,
                    s.port});
  });
  return hops;
}

}  // namespace tessera::platforms
