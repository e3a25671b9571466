#include "platforms/topology.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

namespace tessera::platforms {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::PcieSwitch: return "pcie-switch";
    case DeviceKind::RootComplex: return "root-complex";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::NetworkSwitch: return "network-switch";
  }
  return "?";
}

const char* link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::Nvlink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Network: return "network";
  }
  return "?";
}

uint32_t Graph::add_device(DeviceKind kind, std::string name, double latency_ns) {
  GraphDevice d;
  d.kind = kind;
  d.name = std::move(name);
  d.latency_ns = latency_ns;
  devices.push_back(std::move(d));
  return static_cast<uint32_t>(devices.size() - 1);
}

uint32_t Graph::connect(uint32_t a, uint32_t b, LinkKind kind, const protocol::LinkTiming& timing,
                        uint32_t lanes) {
  GraphLink link;
  link.a = a;
  link.b = b;
  link.a_port = ports(a);
  link.b_port = ports(b);
  link.kind = kind;
  link.timing = timing;
  link.lanes = lanes;
  links.push_back(link);
  const uint32_t id = static_cast<uint32_t>(links.size() - 1);
  devices[a].port_links.push_back(id);
  devices[b].port_links.push_back(id);
  return id;
}

uint32_t Graph::physical_ports(uint32_t device) const {
  uint32_t n = 0;
  for (uint32_t l : devices[device].port_links) n += links[l].lanes;
  return n;
}

uint32_t Graph::neighbor(uint32_t device, uint32_t port) const {
  const GraphLink& l = links[devices[device].port_links[port]];
  return l.a == device && l.a_port == port ? l.b : l.a;
}

uint32_t Graph::directed_link(uint32_t device, uint32_t port) const {
  const uint32_t li = devices[device].port_links[port];
  const GraphLink& l = links[li];
  return 2 * li + (l.a == device && l.a_port == port ? 0 : 1);
}

namespace {

std::string str(uint64_t v) { return std::to_string(v); }

}  // namespace

protocol::LinkTiming nic_link_timing(const PlatformConfig& c);

namespace {

// The devices and links inside one node.
void build_node(const PlatformConfig& c, NodeTemplate& nt) {
  Graph& g = nt.graph;
  const NodeSpec& n = c.node;
  nt.gpus = static_cast<uint32_t>(n.gpus);
  for (int i = 0; i < n.gpus; ++i) g.add_device(DeviceKind::Gpu, "gpu" + str(i), 0.0);

  LinkSpec nvlink = n.nvlink.link;
  if (nvlink.bandwidth_gb_per_s <= 0) nvlink.bandwidth_gb_per_s = c.gpu.nvlink_port_bandwidth_gbps;
  std::vector<uint32_t> nvswitches;
  // Each NVLink island (the whole node unless node.nvlink.islands splits it) has its own switches.
  const int islands = std::max(1, n.nvlink.islands), per_island = n.gpus / islands;
  for (int island = 0; island < islands; ++island) {
    const std::string suffix = islands > 1 ? ".island" + str(island) : "";
    const int first = island * per_island, last = first + per_island;
    if (n.nvlink.striped && n.nvlink.switches > 1 && c.network.topology != Topology::NvlinkNetwork) {
      // Every chip carries a share of every transfer: one crossbar with the bonded links.
      int lanes = 0;
      for (int s = 0; s < n.nvlink.switches; ++s) lanes += c.nvlinks_to_switch(s);
      const uint32_t sw = g.add_device(DeviceKind::NvSwitch, "nvswitch0-" + str(n.nvlink.switches - 1) + suffix,
                                       n.nvlink.switch_latency_ns);
      nvswitches.push_back(sw);
      g.devices[sw].chips = static_cast<uint32_t>(n.nvlink.switches);
      for (int i = first; i < last && lanes > 0; ++i)
        g.connect(static_cast<uint32_t>(i), sw, LinkKind::Nvlink, nvlink.timing(lanes), static_cast<uint32_t>(lanes));
      continue;
    }
    for (int s = 0; s < n.nvlink.switches; ++s) {
      const uint32_t sw = g.add_device(DeviceKind::NvSwitch, "nvswitch" + str(s) + suffix, n.nvlink.switch_latency_ns);
      nvswitches.push_back(sw);
      const int lanes = c.nvlinks_to_switch(s);
      if (lanes <= 0) continue;
      for (int i = first; i < last; ++i)
        g.connect(static_cast<uint32_t>(i), sw, LinkKind::Nvlink, nvlink.timing(lanes), static_cast<uint32_t>(lanes));
    }
  }

  const uint32_t host = g.add_device(DeviceKind::RootComplex, "host", n.pcie.root_complex_latency_ns);
  std::vector<uint32_t> pcie;
  for (int p = 0; p < n.pcie.switches; ++p) {
    pcie.push_back(g.add_device(DeviceKind::PcieSwitch, "pcie" + str(p), n.pcie.switch_latency_ns));
    g.connect(pcie.back(), host, LinkKind::Pcie, n.pcie.host_link.timing());
  }
  // Devices are spread evenly over the PCIe switches (or hang off the root complex).
  auto pcie_parent = [&](int index, int count) {
    if (pcie.empty()) return host;
    const int per = std::max(1, count / static_cast<int>(pcie.size()));
    return pcie[std::min<size_t>(static_cast<size_t>(index / per), pcie.size() - 1)];
  };
  for (int i = 0; i < n.gpus; ++i)
    g.connect(static_cast<uint32_t>(i), pcie_parent(i, n.gpus), LinkKind::Pcie, n.pcie.link.timing());

  std::vector<uint32_t> nics;
  for (int k = 0; k < n.nics.count; ++k) {
    nics.push_back(g.add_device(DeviceKind::Nic, "nic" + str(k), n.nics.latency_ns));
    g.connect(nics.back(), pcie_parent(k, n.nics.count), LinkKind::Pcie, n.pcie.link.timing());
  }


  // Gateways: the NICs, or the NVSwitches themselves when NVLink is the network.
  const Topology topo = c.network.topology;
  if (topo == Topology::NvlinkNetwork) {
    for (int s = 0; s < n.nvlink.switches; ++s) {
      nt.gateways.push_back(nvswitches[s]);
      // The node switch's NVLinks up, fewer than down by the oversubscription.
      const double down = double(n.gpus) * c.nvlinks_to_switch(s);
      nt.uplinks.push_back(static_cast<uint32_t>(std::max(1.0, std::floor(down / c.network.oversubscription + 1e-9))));
    }
    // The uplinks are NVLinks cabled to the second tier: network.link describes them.
    nt.uplink_timing = c.network.link.timing();
  } else if (topo != Topology::None) {
    for (uint32_t nic : nics) {
      nt.gateways.push_back(nic);
      nt.uplinks.push_back(1);
    }
    nt.uplink_timing = nic_link_timing(c);
  }
}

// Builds the network graph around the gateways.
class NetworkBuilder {
 public:
  NetworkBuilder(const PlatformConfig& c, const NodeTemplate& nt, Network& net)
      : c_(c), nt_(nt), net_(net), g_(net.graph) {
    const uint32_t per_node = static_cast<uint32_t>(nt.gateways.size());
    net_.gateways = static_cast<uint32_t>(c.nodes) * per_node;
    g_.devices.reserve(net_.gateways);
    for (int node = 0; node < c.nodes; ++node)
      for (uint32_t gw = 0; gw < per_node; ++gw) {
        const GraphDevice& d = nt.graph.devices[nt.gateways[gw]];
        g_.add_device(d.kind, "node" + str(node) + "." + d.name, d.latency_ns);
      }
    switch_timing_ = c.network.link.timing();
    const protocol::LinkTiming nic = nic_link_timing(c);
    if (switch_timing_.max_packet_payload_bytes == 0) {
      switch_timing_.max_packet_payload_bytes = nic.max_packet_payload_bytes;
      switch_timing_.packet_overhead_bytes = nic.packet_overhead_bytes;
    }
  }

  void build() {
    switch (c_.network.topology) {
      case Topology::None: return;
      case Topology::FatTree: return fat_tree(false);
      case Topology::RailOptimized: return fat_tree(true);
      case Topology::Torus: return torus();
      case Topology::Dragonfly: return dragonfly();
      case Topology::NvlinkNetwork: return nvlink_network();
      case Topology::LinkList: return link_list();
    }
  }

 private:
  uint32_t add_switch(const std::string& name) {
    return g_.add_device(DeviceKind::NetworkSwitch, name, c_.network.switch_latency_ns);
  }
  uint32_t gateway(uint32_t node, uint32_t gw) const {
    return node * static_cast<uint32_t>(nt_.gateways.size()) + gw;
  }
  void attach(uint32_t gateway_device, uint32_t sw) {
    g_.connect(gateway_device, sw, LinkKind::Network, nt_.uplink_timing);
  }
  void cable(uint32_t a, uint32_t b, uint32_t lanes = 1) {
    protocol::LinkTiming t = switch_timing_;
    t.bandwidth_bytes_per_s *= lanes;
    g_.connect(a, b, LinkKind::Network, t, lanes);
  }
  // Connects `from` switches, `up` uplinks each, to `to` switches round-robin; parallel
  // uplinks to the same switch become one link of several lanes.
  void spread(const std::vector<uint32_t>& from, uint32_t up, const std::vector<uint32_t>& to,
              bool stagger) {
    std::map<uint32_t, uint32_t> lanes;
    for (size_t i = 0; i < from.size(); ++i) {
      lanes.clear();
      for (uint32_t j = 0; j < up; ++j)
        ++lanes[to[(j + (stagger ? i * up : 0)) % to.size()]];
      for (const auto& [sw, count] : lanes) cable(from[i], sw, count);
    }
  }

  // How many switches of radix k take the `up` uplinks of each of `below` switches: the fewest,
  // at least below x up / k, that divide `up`, so that every switch below gives each of them
  // up / count lanes and each of them has below x up / count <= k ports. 0: none fits.
  static uint32_t even_count(uint32_t below, uint32_t up, uint32_t k) {
    const uint32_t needed = std::max<uint32_t>(1, (below * up + k - 1) / k);
    for (uint32_t count = needed; count <= up; ++count)
      if (up % count == 0) return count;
    return 0;
  }

  // Leaf ports down and up: down/up = oversubscription.
  std::pair<uint32_t, uint32_t> leaf_ports() const {
    const double o = c_.network.oversubscription;
    const uint32_t k = static_cast<uint32_t>(c_.network.radix);
    uint32_t down = static_cast<uint32_t>(double(k) * o / (1.0 + o) + 1e-9);
    down = std::clamp<uint32_t>(down, 1, k - 1);
    return {down, k - down};
  }

  // Two- or three-tier Clos above the leaves (tiers 0: the fewest that fit).
  void clos(const std::vector<uint32_t>& leaves, uint32_t up, bool always_spines) {
    const uint32_t k = static_cast<uint32_t>(c_.network.radix);
    const uint32_t n = static_cast<uint32_t>(leaves.size());
    if (n == 1 && !always_spines) return;
    int tiers = c_.network.tiers;
    if (tiers == 0) tiers = n <= k ? 2 : 3;
    if (tiers == 2) {
      if (n > k)
        throw PlatformError("network.tiers", str(n) + " leaf switches do not fit under one tier of " +
                                                 str(k) + "-port spines; use tiers: 3");
      const uint32_t spines = even_count(n, up, k);
      std::vector<uint32_t> top;
      for (uint32_t s = 0; s < spines; ++s) top.push_back(add_switch("spine" + str(s)));
      spread(leaves, up, top, false);
      return;
    }
    // Three tiers: pods of k/2 leaves, each leaf to every aggregation switch of its pod (up of
    // them), each aggregation switch's k/2 uplinks to its own group of cores.
    const uint32_t pod_leaves = std::max<uint32_t>(1, k / 2);
    const uint32_t pods = (n + pod_leaves - 1) / pod_leaves;
    const uint32_t agg_up = k - pod_leaves;
    if (pods > k)
      throw PlatformError("network.radix", str(n) + " leaf switches need more than three tiers of " +
                                               str(k) + "-port switches");
    const uint32_t cores_per_group = even_count(pods, agg_up, k);
    std::vector<std::vector<uint32_t>> core_groups(up);
    for (uint32_t a = 0; a < up; ++a)
      for (uint32_t c = 0; c < cores_per_group; ++c)
        core_groups[a].push_back(add_switch("core" + str(a) + "." + str(c)));
    for (uint32_t p = 0; p < pods; ++p) {
      std::vector<uint32_t> aggs;
      for (uint32_t a = 0; a < up; ++a) aggs.push_back(add_switch("pod" + str(p) + ".agg" + str(a)));
      const std::vector<uint32_t> members(leaves.begin() + p * pod_leaves,
                                          leaves.begin() + std::min(n, (p + 1) * pod_leaves));
      spread(members, up, aggs, false);
      for (uint32_t a = 0; a < up; ++a) spread({aggs[a]}, agg_up, core_groups[a], false);
    }
  }

  void fat_tree(bool rails) {
    const auto [down, up] = leaf_ports();
    const uint32_t nodes = static_cast<uint32_t>(c_.nodes);
    const uint32_t per_node = static_cast<uint32_t>(nt_.gateways.size());
    std::vector<uint32_t> leaves;
    if (rails) {
      // Rail r of group q: NIC r of the nodes q*down .. q*down+down-1.
      const uint32_t groups = (nodes + down - 1) / down;
      for (uint32_t q = 0; q < groups; ++q)
        for (uint32_t r = 0; r < per_node; ++r) {
          leaves.push_back(add_switch("rail" + str(r) + ".leaf" + str(q)));
          for (uint32_t node = q * down; node < std::min(nodes, (q + 1) * down); ++node)
            attach(gateway(node, r), leaves.back());
        }
      clos(leaves, up, per_node > 1);
    } else {
      uint32_t endpoint = 0;
      for (uint32_t gw = 0; gw < net_.gateways; ++gw)
        for (uint32_t u = 0; u < nt_.uplinks[gw % per_node]; ++u, ++endpoint) {
          if (endpoint % down == 0) leaves.push_back(add_switch("leaf" + str(endpoint / down)));
          attach(gw, leaves.back());
        }
      clos(leaves, up, false);
    }
  }

  void torus() {
    const std::vector<int>& dims = c_.network.torus_dims;
    net_.torus_dims = dims;
    uint32_t count = 1;
    for (int d : dims) count *= static_cast<uint32_t>(d);
    if (count != static_cast<uint32_t>(c_.nodes))
      throw PlatformError("network.torus_dims", "the torus has " + str(count) + " positions but there are " +
                                                    str(c_.nodes) + " nodes");
    std::vector<uint32_t> sw(count);
    for (uint32_t i = 0; i < count; ++i) {
      std::string name = "torus";
      uint32_t rest = i;
      for (size_t d = 0; d < dims.size(); ++d) {
        name += (d == 0 ? "(" : ",") + str(rest % dims[d]);
        rest /= dims[d];
      }
      sw[i] = add_switch(name + ")");
      for (uint32_t gw = 0; gw < nt_.gateways.size(); ++gw) attach(gateway(i, gw), sw[i]);
    }
    // Each ring along each dimension, once (a ring of two is one link).
    uint32_t stride = 1;
    for (int size : dims) {
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t coord = (i / stride) % size;
        if (size == 2 && coord == 1) continue;
        const uint32_t next = coord + 1 == uint32_t(size) ? i - coord * stride : i + stride;
        cable(sw[i], sw[next]);
      }
      stride *= static_cast<uint32_t>(size);
    }
  }

  void dragonfly() {
    const uint32_t groups = static_cast<uint32_t>(c_.network.dragonfly_groups);
    const uint32_t a = static_cast<uint32_t>(c_.network.dragonfly_routers_per_group);
    const uint32_t h = static_cast<uint32_t>(c_.network.dragonfly_global_links_per_router);
    const uint32_t routers = groups * a;
    if (routers == 0 || c_.nodes % routers != 0)
      throw PlatformError("network.dragonfly_groups", str(groups) + " groups of " + str(a) +
                                                          " routers do not divide " + str(c_.nodes) + " nodes");
    if (groups > 1 && a * h < groups - 1)
      throw PlatformError("network.dragonfly_global_links_per_router",
                          "each group needs at least " + str(groups - 1) + " global links, has " + str(a * h));
    const uint32_t nodes_per_router = static_cast<uint32_t>(c_.nodes) / routers;
    net_.dragonfly_routers_per_group = a;
    std::vector<uint32_t> r(routers);
    for (uint32_t i = 0; i < routers; ++i) {
      r[i] = add_switch("group" + str(i / a) + ".router" + str(i % a));
      for (uint32_t node = i * nodes_per_router; node < (i + 1) * nodes_per_router; ++node)
        for (uint32_t gw = 0; gw < nt_.gateways.size(); ++gw) attach(gateway(node, gw), r[i]);
    }
    for (uint32_t gr = 0; gr < groups; ++gr)
      for (uint32_t x = 0; x < a; ++x)
        for (uint32_t y = x + 1; y < a; ++y) cable(r[gr * a + x], r[gr * a + y]);
    if (groups < 2) return;
    // Global links: every pair of groups gets a*h/(groups-1) links, dealt out to the routers.
    const uint32_t per_pair = std::max<uint32_t>(1, a * h / (groups - 1));
    std::vector<uint32_t> used(groups, 0);
    for (uint32_t g1 = 0; g1 < groups; ++g1)
      for (uint32_t g2 = g1 + 1; g2 < groups; ++g2)
        for (uint32_t l = 0; l < per_pair; ++l) {
          const uint32_t x = (used[g1]++ / h) % a, y = (used[g2]++ / h) % a;
          cable(r[g1 * a + x], r[g2 * a + y]);
        }
  }

  // Second-tier NVSwitches, one set per plane: the node NVSwitch of plane s spreads its uplinks
  // over the plane's second-tier switches.
  void nvlink_network() {
    const uint32_t k = static_cast<uint32_t>(c_.network.radix);
    const uint32_t per_node = static_cast<uint32_t>(nt_.gateways.size());
    for (uint32_t s = 0; s < per_node; ++s) {
      const uint32_t up = nt_.uplinks[s];
      if (up == 0) continue;
      const uint32_t count = even_count(static_cast<uint32_t>(c_.nodes), up, k);
      if (count == 0)
        throw PlatformError("network.radix", "plane " + str(s) + " needs more than " + str(up) +
                                                 " second-tier NVSwitches of " + str(k) + " ports but a node switch has only " +
                                                 str(up) + " uplinks; raise the radix");
      std::vector<uint32_t> top;
      for (uint32_t i = 0; i < count; ++i) {
        top.push_back(add_switch("plane" + str(s) + ".nvswitch" + str(i)));
        g_.devices.back().kind = DeviceKind::NvSwitch;
        g_.devices.back().latency_ns = c_.node.nvlink.switch_latency_ns;
      }
      std::vector<uint32_t> lanes(count);
      for (uint32_t node = 0; node < static_cast<uint32_t>(c_.nodes); ++node) {
        std::fill(lanes.begin(), lanes.end(), 0);
        for (uint32_t u = 0; u < up; ++u) ++lanes[u % count];
        // One network link per uplink NVLink: the builder gives a gateway one port per uplink.
        for (uint32_t i = 0; i < count; ++i)
          for (uint32_t l = 0; l < lanes[i]; ++l) attach(gateway(node, s), top[i]);
      }
    }
  }

  void link_list() {
    std::map<std::string, uint32_t> by_name;
    for (uint32_t d = 0; d < net_.gateways; ++d) by_name[g_.devices[d].name] = d;
    for (const std::string& name : c_.network.switches) by_name[name] = add_switch(name);
    for (const ExplicitLink& l : c_.network.links) {
      auto a = by_name.find(l.from), b = by_name.find(l.to);
      if (a == by_name.end() || b == by_name.end())
        throw PlatformError("network.links", "link " + l.from + " -> " + l.to + " names " +
                                                 (a == by_name.end() ? l.from : l.to) +
                                                 ", which is neither a switch nor a gateway");
      protocol::LinkTiming t = switch_timing_;
      t.bandwidth_bytes_per_s = l.bandwidth_gb_per_s * 1e9;
      t.latency = sc_core::sc_time(l.latency_ns, sc_core::SC_NS);
      g_.connect(a->second, b->second, LinkKind::Network, t);
    }
  }

  const PlatformConfig& c_;
  const NodeTemplate& nt_;
  Network& net_;
  Graph& g_;
  protocol::LinkTiming switch_timing_;
};

}  // namespace

protocol::LinkTiming nic_link_timing(const PlatformConfig& c) {
  protocol::LinkTiming t;
  t.bandwidth_bytes_per_s = c.node.nics.line_rate_gbit_per_s * 1e9 / 8.0;
  t.latency = sc_core::sc_time(c.network.link.latency_ns, sc_core::SC_NS);
  t.packet_overhead_bytes = c.node.nics.header_bytes;
  t.max_packet_payload_bytes = c.node.nics.mtu_bytes;
  return t;
}

int Network::first_differing_dimension(uint32_t a, uint32_t b) const {
  for (size_t d = 0; d < torus_dims.size(); ++d) {
    const uint32_t size = static_cast<uint32_t>(torus_dims[d]);
    if (a % size != b % size) return static_cast<int>(d);
    a /= size, b /= size;
  }
  return -1;
}

PlatformGraph generate_topology(const PlatformConfig& config) {
  PlatformGraph t;
  t.nodes = static_cast<uint32_t>(config.nodes);
  build_node(config, t.node);
  NetworkBuilder(config, t.node, t.network).build();
  return t;
}

}  // namespace tessera::platforms
