#include "platforms/flow_paths.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::platforms {

RoutedPaths::RoutedPaths(const PlatformGraph& topology, const Routing& routing,
                         sc_core::sc_time nic_message_overhead)
    : topology_(topology), routing_(routing), nic_overhead_(nic_message_overhead) {
  node_links_ = static_cast<uint32_t>(topology_.node.graph.links.size());
  const uint64_t count = 2 * (uint64_t(topology_.nodes) * node_links_ + topology_.network.graph.links.size());
  if (count >= 0xffffffffu) throw std::invalid_argument("the platform has too many links for flow fidelity");
  links_ = static_cast<uint32_t>(count);
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
  const Graph& g = topology_.node.graph;
  const uint32_t li = g.devices[device].port_links[port];
  const GraphLink& l = g.links[li];
  const uint32_t direction = (l.a == device && l.a_port == port) ? 0 : 1;
  return 2 * (node * node_links_ + li) + direction;
}

uint32_t RoutedPaths::network_link(uint32_t device, uint32_t port) const {
  const Graph& g = topology_.network.graph;
  const uint32_t li = g.devices[device].port_links[port];
  const GraphLink& l = g.links[li];
  const uint32_t direction = (l.a == device && l.a_port == port) ? 0 : 1;
  return 2 * (topology_.nodes * node_links_ + li) + direction;
}

void RoutedPaths::path(const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const {
  links.clear();
  routing_.walk(t, [&](const Routing::Step& s) {
    links.push_back(s.network ? network_link(s.device, s.port) : node_link(s.node, s.device, s.port));
  });
}

}  // namespace tessera::platforms
