// Network links that no allocation can fill (Routing::links_that_cannot_fill, docs/fidelity.md
// "Links that cannot fill").
//
// A transfer from gateway s to gateway t puts share_l(s, t) of its bytes on network link l
// (Routing::network_spread), and every such transfer also crosses a link out of s and a link
// into t whole. So, with r(s, t) the rate between them, in any allocation that keeps the
// gateways' own links within their capacity:
//   load(l) = sum over s, t of share_l(s, t) r(s, t)
//          <= sum over s of out(s) x max over t of share_l(s, t)     (the senders' bound)
//          <= sum over t of in(t) x max over s of share_l(s, t)      (the receivers' bound)
// with out(s), in(t) the capacities of the gateway's links to and from the network. A link
// whose capacity is at least the smaller bound never constrains a flow: the max-min allocation
// without it keeps it within its capacity, so it is the allocation with it too. On a tree that
// is not oversubscribed, where every switch spreads what it forwards evenly, that is every link
// between switches: a leaf's 20 uplinks carry a twentieth each of what its 20 gateways send.
//
// The shares depend on the source only through its first switch (a gateway with one uplink;
// one with several counts alone) and on the destination only through its routing key (the
// switches it hangs off), so the bounds take one spread per pair of those classes, twice.
// Loads are compared in wire bytes, which needs every network link to frame packets alike.
#include <algorithm>
#include <stdexcept>

#include "platforms/routing.h"

namespace tessera::platforms {

namespace {

bool same_framing(const protocol::LinkTiming& a, const protocol::LinkTiming& b) {
  return a.packet_overhead_bytes == b.packet_overhead_bytes &&
         a.max_packet_payload_bytes == b.max_packet_payload_bytes;
}

// Senders (or receivers) that share their spreads: a representative gateway, and what all of
// them can send (or receive) in bytes/s.
struct GatewayClass {
  uint32_t first = 0, second = PortLists::kNone;  // two members, where there are two
  double capacity = 0.0;
  void add(uint32_t gateway, double bandwidth) {
    if (capacity == 0.0) first = gateway;
    else if (second == PortLists::kNone) second = gateway;
    capacity += bandwidth;
  }
};

}  // namespace

std::vector<bool> Routing::links_that_cannot_fill(bool in_network_reduction) const {
  const Network& net = topology_.network;
  const Graph& graph = net.graph;
  const uint32_t gws = net.gateways;
  // Aggregation trees' flows cross links between switches outside any spread.
  if (gws == 0 || in_network_reduction) return {};
  const protocol::LinkTiming& framing = graph.links[graph.devices[0].port_links.at(0)].timing;
  std::vector<GatewayClass> senders(graph.devices.size()), receivers(keys_);
  for (uint32_t g = 0; g < gws; ++g)
    for (uint32_t p = 0; p < graph.ports(g); ++p) {
      const GraphLink& link = graph.links[graph.devices[g].port_links[p]];
      if (!same_framing(link.timing, framing)) return {};
      const double bandwidth = link.timing.bandwidth_bytes_per_s;
      receivers[key_of_[g]].add(g, bandwidth);
      // A gateway with one uplink sends as its switch's other gateways do (by the switch's
      // index); one with several is a class of its own (by its own); one cabled to another
      // gateway alone crosses no switch.
      if (graph.ports(g) > 1) senders[g].add(g, bandwidth);
      else if (graph.neighbor(g, 0) >= gws) senders[graph.neighbor(g, 0)].add(g, bandwidth);
    }
  std::vector<uint32_t> sending;
  for (uint32_t c = 0; c < senders.size(); ++c)
    if (senders[c].capacity > 0.0) sending.push_back(c);
  if (uint64_t(sending.size()) * keys_ > kMaxBoundPairs) return {};

  const uint32_t directed = 2 * static_cast<uint32_t>(graph.links.size());
  std::vector<double> most(directed, 0.0), by_senders(directed, 0.0), by_receivers(directed, 0.0);
  std::vector<uint32_t> touched;
  std::vector<Share> spread;
  SpreadScratch scratch;
  // Spreads a transfer between the classes' representatives and keeps, per link between
  // switches, the largest share seen since the last settle().
  auto spread_pair = [&](const GatewayClass& s, const GatewayClass& t) {
    const uint32_t from = s.first;
    const uint32_t to = t.first != from ? t.first : t.second;
    if (to == PortLists::kNone) return;  // the class's one gateway sends nowhere but to others
    try {
      network_spread(from, to, spread, scratch);
    } catch (const std::exception&) {
      return;  // no route between them (separate rails or planes): nothing crosses
    }
    for (const Share& x : spread) {
      if (x.device < gws || graph.neighbor(x.device, x.port) < gws) continue;  // a gateway's link
      const uint32_t l = graph.directed_link(x.device, x.port);
      if (most[l] == 0.0) touched.push_back(l);
      most[l] = std::max(most[l], x.share);
    }
  };
  // Adds to each link's bound its largest share times the capacity of the class held fixed.
  auto settle = [&](std::vector<double>& bound, double capacity) {
    for (uint32_t l : touched) {
      bound[l] += capacity * most[l];
      most[l] = 0.0;
    }
    touched.clear();
  };
  for (uint32_t s : sending) {
    for (uint32_t k = 0; k < keys_; ++k) spread_pair(senders[s], receivers[k]);
    settle(by_senders, senders[s].capacity);
  }
  for (uint32_t k = 0; k < keys_; ++k) {
    for (uint32_t s : sending) spread_pair(senders[s], receivers[k]);
    settle(by_receivers, receivers[k].capacity);
  }

  std::vector<bool> cannot_fill(directed, false);
  for (uint32_t li = 0; li < graph.links.size(); ++li) {
    const GraphLink& link = graph.links[li];
    if (link.a < gws || link.b < gws || !same_framing(link.timing, framing)) continue;
    const double capacity = link.timing.bandwidth_bytes_per_s * (1.0 + 1e-9);  // a tie fills nothing alone
    for (uint32_t l = 2 * li; l < 2 * li + 2; ++l)
      cannot_fill[l] = std::min(by_senders[l], by_receivers[l]) <= capacity;
  }
  return cannot_fill;
}

}  // namespace tessera::platforms
