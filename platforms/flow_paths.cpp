#include "platforms/flow_paths.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::platforms {

RoutedPaths::RoutedPaths(const PlatformGraph& topology, const Routing& routing,
                         sc_core::sc_time nic_message_overhead, size_t max_leg_entries)
    : topology_(topology), routing_(routing), nic_overhead_(nic_message_overhead), max_leg_entries_(max_leg_entries) {
  node_links_ = static_cast<uint32_t>(topology_.node.graph.links.size());
  const uint64_t count = 2 * (uint64_t(topology_.nodes) * node_links_ + topology_.network.graph.links.size());
  if (count >= 0xffffffffu) throw std::invalid_argument("the platform has too many links for flow fidelity");
  links_ = static_cast<uint32_t>(count);
  node_devices_ = static_cast<uint32_t>(topology_.node.graph.devices.size());
  const uint64_t ids = uint64_t(topology_.nodes) * node_devices_ + topology_.network.graph.devices.size();
  if (ids >= 0xffffffffu) throw std::invalid_argument("the platform has too many devices for flow fidelity");
  switch_ids_ = static_cast<uint32_t>(ids);
  // A gateway with one link to a switch: that link both ways and the switch.
  const Graph& net = topology_.network.graph;
  const uint32_t gws = topology_.network.gateways;
  // network_leg's keys: a pair of gateways in 32 bits each, a switch and a routing key in 31.
  if (net.devices.size() >= (uint64_t(1) << 31))
    throw std::invalid_argument("the platform has too many network devices for flow fidelity");
  one_link_.assign(gws, OneLink{});
  for (uint32_t g = 0; g < gws; ++g) {
    if (net.ports(g) != 1 || net.neighbor(g, 0) < gws) continue;
    const GraphLink& l = net.links[net.devices[g].port_links[0]];
    one_link_[g].out = network_link(g, 0);
    one_link_[g].in = l.a == g ? network_link(l.b, l.b_port) : network_link(l.a, l.a_port);
    one_link_[g].to = net.neighbor(g, 0);
  }
}

const GraphLink& RoutedPaths::graph_link(uint32_t id) const {
  const uint64_t node_ids = 2 * uint64_t(topology_.nodes) * node_links_;
  if (id < node_ids) return topology_.node.graph.links[(id / 2) % node_links_];
  return topology_.network.graph.links[(id - node_ids) / 2];
}

models::FlowLink RoutedPaths::link(uint32_t id) const {
  const uint64_t node_ids = 2 * uint64_t(topology_.nodes) * node_links_;
  const GraphLink& l = graph_link(id);
  const uint32_t from = (id & 1) ? l.b : l.a;
  models::FlowLink out;
  out.timing = l.timing;
  if (id < node_ids) {
    // A GPU is an end of the path: no pipeline of its own.
    if (from >= topology_.node.gpus)
      out.hop_latency = sc_core::sc_time(topology_.node.graph.devices[from].latency_ns, sc_core::SC_NS);
    return out;
  }
  const Network& net = topology_.network;
  if (from >= net.gateways) {
    out.hop_latency = sc_core::sc_time(net.graph.devices[from].latency_ns, sc_core::SC_NS);
  } else {  // a gateway's uplink: the NIC's pipeline and its per-message work
    const uint32_t v = topology_.node.gateways[from % topology_.gateways_per_node()];
    out.hop_latency = sc_core::sc_time(topology_.node.graph.devices[v].latency_ns, sc_core::SC_NS);
    if (topology_.node.graph.devices[v].kind == DeviceKind::Nic) out.hop_latency += nic_overhead_;
  }
  return out;
}

std::string RoutedPaths::name(uint32_t id) const {
  const uint64_t node_ids = 2 * uint64_t(topology_.nodes) * node_links_;
  const GraphLink& l = graph_link(id);
  const uint32_t from = (id & 1) ? l.b : l.a;
  const uint32_t port = (id & 1) ? l.b_port : l.a_port;
  if (id < node_ids)
    return "node" + std::to_string(id / 2 / node_links_) + "." + topology_.node.graph.devices[from].name +
           ".out" + std::to_string(port);
  return topology_.network.graph.devices[from].name + ".up" + std::to_string(port);
}

uint32_t RoutedPaths::node_link(uint32_t node, uint32_t device, uint32_t port) const {
  return node_link_id(node, topology_.node.graph.directed_link(device, port));
}

uint32_t RoutedPaths::network_link(uint32_t device, uint32_t port) const {
  return 2 * topology_.nodes * node_links_ + topology_.network.graph.directed_link(device, port);
}

std::vector<bool> RoutedPaths::links_that_cannot_fill(bool in_network_reduction) const {
  const std::vector<bool> network = routing_.links_that_cannot_fill(in_network_reduction);
  std::vector<bool> out(links_, false);
  const uint32_t first = 2 * topology_.nodes * node_links_;  // network_link's offset
  for (uint32_t l = 0; l < network.size(); ++l) out[first + l] = network[l];
  const bool in_series = gateway_links_in_series(out);
  if (network.empty() && !in_series) return {};
  return out;
}

// A gateway that is not a GPU (a NIC: no flow starts or ends there) with one port into its node
// and one link to a switch passes every flow through whole, each way: its link into the node
// carries exactly the flows that came over its network link, and the node's link into it
// exactly those that leave over that link. Where the node's link is never busier than the
// network link for a chunk of any size (LinkTiming::never_busier_than), the network link fills
// first and the node's never constrains a flow (a DGX H100's NICs: PCIe gen5 at 63 GB/s behind
// 400 Gb/s ports). Marks them in `out`; whether any.
bool RoutedPaths::gateway_links_in_series(std::vector<bool>& out) const {
  const NodeTemplate& nt = topology_.node;
  const Graph& net = topology_.network.graph;
  const uint32_t per_node = topology_.gateways_per_node();
  bool any = false;
  for (uint32_t g = 0; g < per_node; ++g) {
    const uint32_t v = nt.gateways[g];
    if (v < nt.gpus || nt.graph.ports(v) != 1) continue;
    const protocol::LinkTiming& inside = nt.graph.links[nt.graph.devices[v].port_links[0]].timing;
    const uint32_t out_of = nt.graph.directed_link(v, 0), into = out_of ^ 1;  // (a link's two directions)
    for (uint32_t node = 0; node < topology_.nodes; ++node) {
      const uint32_t gateway = node * per_node + g;
      if (one_link_[gateway].out == kNoLink) continue;
      if (!inside.never_busier_than(net.links[net.devices[gateway].port_links[0]].timing)) continue;
      out[node_link_id(node, out_of)] = out[node_link_id(node, into)] = true;
      any = true;
    }
  }
  return any;
}

uint32_t RoutedPaths::network_switch(uint32_t x) const {
  if (x < topology_.network.gateways)
    throw std::runtime_error("in-network reduction: a member's network port is not cabled to a switch");
  return topology_.nodes * node_devices_ + x;
}

// The route the switch modules take hop by hop (Routing::walk), stopped at the first switch
// that reduces the chunk: the GPU's NVSwitch, or the network switch at its home NIC's uplink.
uint32_t RoutedPaths::path_to_switch(const protocol::FabricTransfer& transfer, std::vector<uint32_t>& links) const {
  links.clear();
  const NodeTemplate& nt = topology_.node;
  const uint32_t node = transfer.source / nt.gpus;
  if (routing_.stays_in_node(node, transfer))
    return walk_to_switch(transfer, links, [&](uint32_t v) { return routing_.node_port(node, v, transfer); });
  protocol::FabricTransfer t = transfer;  // routing writes the chunk's gateway and turn
  return walk_to_switch(t, links, [&](uint32_t v) { return routing_.node_next(node, v, t); });
}

// path_to_switch's walk, `next` choosing each device's port (a switch inside the node: no
// copy of the transfer, which routing writes only on its way out of the node).
template <typename Next>
uint32_t RoutedPaths::walk_to_switch(const protocol::FabricTransfer& t, std::vector<uint32_t>& links, Next&& next) const {
  const NodeTemplate& nt = topology_.node;
  const Graph& ng = nt.graph;
  const bool network = t.purpose == protocol::TransferPurpose::NetworkReduce;
  const uint32_t node = t.source / nt.gpus;
  uint32_t v = t.source % nt.gpus;
  for (size_t hops = 0; hops <= ng.devices.size(); ++hops) {
    const uint32_t port = next(v);
    if (port >= ng.ports(v)) {  // a gateway's uplink: the switch at its other end
      const uint32_t gw = static_cast<uint32_t>(std::find(nt.gateways.begin(), nt.gateways.end(), v) - nt.gateways.begin());
      const uint32_t x = node * topology_.gateways_per_node() + gw;
      const uint32_t up = port - ng.ports(v);
      links.push_back(network_link(x, up));
      return network_switch(topology_.network.graph.neighbor(x, up));
    }
    links.push_back(node_link(node, v, port));
    v = ng.neighbor(v, port);
    if (!network && ng.devices[v].kind == DeviceKind::NvSwitch) return node * node_devices_ + v;
  }
  throw std::logic_error("the route from GPU " + std::to_string(t.source) + " to its reducing switch does not end");
}

bool RoutedPaths::node_leg(uint32_t node, uint32_t v, protocol::FabricTransfer& t, std::vector<uint32_t>& links) const {
  return walk_in_node(node, v, t, links, [&](uint32_t d) { return routing_.node_next(node, d, t); });
}

// node_leg's walk, `next` choosing each device's port.
template <typename Next>
bool RoutedPaths::walk_in_node(uint32_t node, uint32_t v, const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
                               Next&& next) const {
  const NodeTemplate& nt = topology_.node;
  const Graph& ng = nt.graph;
  for (size_t hops = 0; hops <= ng.devices.size(); ++hops) {
    if (v < nt.gpus && node * nt.gpus + v == t.destination) return true;
    const uint32_t port = next(v);
    if (port >= ng.ports(v)) return false;  // a gateway's uplinks: it leaves the node
    links.push_back(node_link(node, v, port));
    v = ng.neighbor(v, port);
  }
  throw std::logic_error("the route from GPU " + std::to_string(t.source) + " to GPU " +
                         std::to_string(t.destination) + " does not end in node " + std::to_string(node));
}

void RoutedPaths::into_node(uint32_t node, uint32_t v, const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const {
  // Every choice on the way is inside the node (Routing::inside_node): nothing written to `t`.
  if (!routing_.stays_in_node(node, t) || !walk_in_node(node, v, t, links, [&](uint32_t d) { return routing_.node_port(node, d, t); }))
    throw std::logic_error("no route inside node " + std::to_string(node) + " to GPU " + std::to_string(t.destination));
}

void RoutedPaths::path_from_switch(uint32_t from, const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const {
  links.clear();
  if (from >= topology_.nodes * node_devices_)
    throw std::logic_error("a path from a network switch to a GPU leaves by its aggregation tree (tree_hop)");
  into_node(from / node_devices_, from % node_devices_, t, links);
}

uint32_t RoutedPaths::tree_device(uint32_t id) const { return id - topology_.nodes * node_devices_; }

uint32_t RoutedPaths::tree_hop(uint32_t from, uint32_t port, const protocol::FabricTransfer& t,
                               std::vector<uint32_t>& links) const {
  links.clear();
  const uint32_t x = tree_device(from);
  links.push_back(network_link(x, port));
  const uint32_t y = topology_.network.graph.neighbor(x, port);
  const uint32_t gateways = topology_.network.gateways;
  if (y >= gateways) return network_switch(y);
  // A member's network port: on through its node to the GPU.
  const uint32_t per_node = topology_.gateways_per_node();
  into_node(y / per_node, topology_.node.gateways[y % per_node], t, links);
  return kNoSwitch;
}

// The network leg of a transfer between nodes, spread once and kept (a job's transfers between
// nodes repeat few pairs: its pipeline and data-parallel neighbours), in pieces (LegPieces);
// past max_leg_entries_ entries kept, legs are spread again each time instead. Where each
// gateway has its one link to a switch, and the switches differ, the leg is the links between
// switches, kept once for every gateway on the same switch to every gateway of the same routing
// key (they spread alike, as Routing::links_that_cannot_fill uses), and the gateways' links are
// crossed whole (ends.head, ends.tail); else it is every network link, kept per pair of gateways.
RoutedPaths::NetworkLeg RoutedPaths::network_leg(Ends& ends) const {
  uint64_t key = uint64_t(ends.from) << 32 | ends.to;
  ends.head = ends.tail = kNoLink;
  const OneLink& from = one_link_[ends.from];
  const OneLink& to = one_link_[ends.to];
  if (from.out != kNoLink && to.out != kNoLink && from.to != to.to) {
    ends.head = from.out;
    ends.tail = to.in;
    key = uint64_t(1) << 63 | uint64_t(from.to) << 31 | routing_.destination_key(ends.to);  // (both < 2^31)
  }
  if (const NetworkLeg* found = legs_.find(key)) return *found;
  routing_.network_spread(ends.from, ends.to, spread_, scratch_);
  fresh_links_.clear();
  fresh_shares_.clear();
  for (const Routing::Share& x : spread_) {
    const uint32_t link = network_link(x.device, x.port);
    if (link == ends.head || link == ends.tail) continue;
    fresh_links_.push_back(link);
    fresh_shares_.push_back(x.share);
  }
  NetworkLeg leg;
  if (pieces_.entries() + LegPieces::at_most(fresh_links_.size()) > max_leg_entries_) return leg;
  leg.list = pieces_.store(fresh_links_, fresh_shares_);
  leg.id = static_cast<uint32_t>(kept_.size());
  kept_.push_back(leg);
  legs_.insert(key, leg);
  return leg;
}

models::PathProvider::Leg RoutedPaths::leg(uint32_t id) const {
  return pieces_.view(kept_.at(id).list);
}

// A node's part of a path, spread over the node's equal-cost ports (Routing::node_spread):
// the same in every node, so spread once per (device, target) of the node template.
const RoutedPaths::NodeSpread& RoutedPaths::node_spread(uint32_t from, uint32_t target) const {
  const size_t key = size_t(from) * routing_.node_targets() + target;
  if (node_spreads_.size() <= key) node_spreads_.resize(size_t(node_devices_) * routing_.node_targets());
  NodeSpread& spread = node_spreads_[key];
  if (spread.known) return spread;
  routing_.node_spread(from, target, spread_, scratch_);
  spread = NodeSpread{static_cast<uint32_t>(spread_links_.size()), static_cast<uint32_t>(spread_.size()), true};
  for (const Routing::Share& x : spread_) {
    spread_links_.push_back(topology_.node.graph.directed_link(x.device, x.port));
    spread_shares_.push_back(x.share);
  }
  return spread;
}

void RoutedPaths::append_node_spread(uint32_t node, uint32_t from, uint32_t target, std::vector<uint32_t>& links,
                                     std::vector<double>& shares) const {
  const NodeSpread& spread = node_spread(from, target);
  for (uint32_t i = spread.first; i < spread.first + spread.count; ++i) {
    links.push_back(node_link_id(node, spread_links_[i]));
    shares.push_back(spread_shares_[i]);
  }
}

// Shares that are all whole are left out (a path of one way through its nodes and whole
// network links: what consumers take fastest).
static void drop_whole_shares(std::vector<double>& shares) {
  if (std::all_of(shares.begin(), shares.end(), [](double s) { return s == 1.0; })) shares.clear();
}

bool RoutedPaths::to_network(protocol::FabricTransfer& t, std::vector<uint32_t>& links, std::vector<double>& shares,
                             Ends& ends) const {
  const NodeTemplate& nt = topology_.node;
  const uint32_t node = t.source / nt.gpus, gpu = t.source % nt.gpus;
  if (t.destination / nt.gpus == node) {  // within the node
    append_node_spread(node, gpu, t.destination % nt.gpus, links, shares);
    return true;
  }
  routing_.node_next(node, gpu, t);  // (the source GPU picks the gateway it leaves by: t.gateway)
  append_node_spread(node, gpu, nt.gpus + t.gateway, links, shares);
  const uint32_t per_node = topology_.gateways_per_node();
  ends.there = t.destination / nt.gpus;
  ends.entry = routing_.entry_gateway(t);
  ends.from = node * per_node + t.gateway;
  ends.to = ends.there * per_node + ends.entry;
  return false;
}

// A transfer spreads over the equal-cost ports of its nodes (Routing::node_spread) and of the
// network (Routing::network_spread), as packet fidelity's chunks do; it leaves its node by the
// gateway its source GPU picks, as packet fidelity's first chunk does.
void RoutedPaths::path(const protocol::FabricTransfer& transfer, std::vector<uint32_t>& links,
                       std::vector<double>& shares) const {
  assemble(transfer, links, shares, false);
}

// The same, the network leg named where it is kept: the links in the nodes, whole.
uint32_t RoutedPaths::path_with_leg(const protocol::FabricTransfer& transfer, std::vector<uint32_t>& links,
                                    std::vector<double>& shares) const {
  return assemble(transfer, links, shares, true);
}

// The path: the source node's part, the network leg (listed, or, with `name_kept`, named where it
// is kept, its gateways' links listed), the destination node's part.
uint32_t RoutedPaths::assemble(const protocol::FabricTransfer& transfer, std::vector<uint32_t>& links,
                               std::vector<double>& shares, bool name_kept) const {
  links.clear();
  shares.clear();
  protocol::FabricTransfer t = transfer;  // routing writes the chunk's gateway
  Ends ends;
  uint32_t named = kNoLeg;
  if (!to_network(t, links, shares, ends)) {
    const NetworkLeg leg = network_leg(ends);
    if (name_kept && leg.id != kNoLeg) {
      named = leg.id;
      for (const uint32_t end : {ends.head, ends.tail})
        if (end != kNoLink) {
          links.push_back(end);
          shares.push_back(1.0);
        }
    } else {
      list_leg(leg, ends, links, shares);
    }
    append_node_spread(ends.there, topology_.node.gateways[ends.entry], t.destination % topology_.node.gpus, links,
                       shares);
  }
  drop_whole_shares(shares);
  return named;
}

// Appends the leg's links and shares, the gateways' links crossed whole around them.
void RoutedPaths::list_leg(const NetworkLeg& leg, const Ends& ends, std::vector<uint32_t>& links,
                           std::vector<double>& shares) const {
  if (ends.head != kNoLink) {
    links.push_back(ends.head);
    shares.push_back(1.0);
  }
  if (leg.id != kNoLeg) {
    pieces_.append(leg.list, links, shares);
  } else {  // the leg just spread
    links.insert(links.end(), fresh_links_.begin(), fresh_links_.end());
    shares.insert(shares.end(), fresh_shares_.begin(), fresh_shares_.end());
  }
  if (ends.tail != kNoLink) {
    links.push_back(ends.tail);
    shares.push_back(1.0);
  }
}

}  // namespace tessera::platforms
