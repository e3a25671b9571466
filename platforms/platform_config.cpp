#include "platforms/platform_config.h"

#include "models/rtl/registry.h"
#include "workloads/limits.h"

#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <set>

namespace tessera::platforms {

protocol::LinkTiming LinkSpec::timing(double lanes) const {
  protocol::LinkTiming t;
  t.bandwidth_bytes_per_s = bandwidth_gb_per_s * 1e9 * lanes;
  t.latency = sc_core::sc_time(latency_ns, sc_core::SC_NS);
  t.packet_overhead_bytes = packet_overhead_bytes;
  t.max_packet_payload_bytes = max_packet_bytes;
  return t;
}

namespace {

struct TopologySpelling {
  Topology topology;
  const char* name;
};
constexpr TopologySpelling kTopologies[] = {
    {Topology::None, "none"},
    {Topology::FatTree, "fat-tree"},
    {Topology::RailOptimized, "rail-optimized"},
    {Topology::Torus, "torus"},
    {Topology::Dragonfly, "dragonfly"},
    {Topology::NvlinkNetwork, "nvlink-network"},
    {Topology::LinkList, "links"},
};

std::string number(double v) { return limits::shown(v); }

[[noreturn]] void fail(const std::string& key, const std::string& message) {
  throw PlatformError(key, message);
}

void in_range(double v, const std::string& key, const limits::Range& range) {
  const std::string problem = limits::problem(v, range);
  if (!problem.empty()) fail(key, problem);
}

// The ranges of docs/limits.md: a rate from 1 MB/s (a 128 KiB chunk in 0.13 s) to 1 PB/s, a
// latency up to a second, an amount of memory up to 1 PiB.
const limits::Range kRate{1e-3, 1e6};
const limits::Range kLatencyNs = limits::non_negative(limits::kMaxDelayS * 1e9);
const limits::Range kGib = limits::positive(1024.0 * 1024.0);
const limits::Range kBufferBytes = limits::positive(limits::kMaxOpBytes);
const limits::Range kCount = limits::integers(1, limits::kMaxGpusPerNode);

void rate(double v, const std::string& key) { in_range(v, key, kRate); }
void latency_ns(double v, const std::string& key) { in_range(v, key, kLatencyNs); }

void fraction(double v, const std::string& key) {
  if (!(v > 0) || v > 1) fail(key, "must be a fraction in (0, 1], got " + number(v));
}

void check_link(const LinkSpec& link, const std::string& key) {
  rate(link.bandwidth_gb_per_s, key + ".bandwidth_gb_per_s");
  latency_ns(link.latency_ns, key + ".latency_ns");
}

// "node<N>.nic<K>" -> (N, K); false if the name has another shape.
bool parse_nic_endpoint(const std::string& name, long& node, long& nic) {
  auto digits = [](const std::string& s, size_t& pos, long& out) {
    const size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos == start || pos - start > 9) return false;
    out = std::stol(s.substr(start, pos - start));
    return true;
  };
  if (name.rfind("node", 0) != 0) return false;
  size_t pos = 4;
  if (!digits(name, pos, node)) return false;
  if (name.compare(pos, 4, ".nic") != 0) return false;
  pos += 4;
  if (!digits(name, pos, nic)) return false;
  return pos == name.size();
}

void check_link_list(const PlatformConfig& c) {
  const NetworkSpec& net = c.network;
  std::set<std::string> switches;
  for (size_t i = 0; i < net.switches.size(); ++i) {
    const std::string key = "network.switches[" + std::to_string(i) + "]";
    const std::string& name = net.switches[i];
    long n = 0, k = 0;
    if (name.empty()) fail(key, "a switch needs a name");
    if (parse_nic_endpoint(name, n, k) || name.rfind("node", 0) == 0)
      fail(key, "switch name '" + name + "' is reserved for node endpoints (node<N>.nic<K>)");
    if (!switches.insert(name).second) fail(key, "switch '" + name + "' is named twice");
  }
  if (net.links.empty()) fail("network.links", "topology 'links' needs at least one link");

  // Every endpoint exists; then every node and switch is reachable (a NIC reaches its node's
  // other NICs through the node's PCIe tree).
  std::map<std::string, std::vector<std::string>> adjacent;
  auto node_of = [](const std::string& endpoint) {
    return endpoint.substr(0, endpoint.find('.'));
  };
  for (size_t i = 0; i < net.links.size(); ++i) {
    const ExplicitLink& l = net.links[i];
    const std::string key = "network.links[" + std::to_string(i) + "]";
    rate(l.bandwidth_gb_per_s, key + ".bandwidth_gb_per_s");
    latency_ns(l.latency_ns, key + ".latency_ns");
    for (const auto& [end, field] : {std::pair{l.from, "from"}, std::pair{l.to, "to"}}) {
      long n = 0, k = 0;
      if (switches.count(end)) continue;
      if (parse_nic_endpoint(end, n, k)) {
        if (n >= c.nodes)
          fail(key + "." + field, "link to '" + end + "': there is no node " + std::to_string(n) +
                                      " (nodes: " + std::to_string(c.nodes) + ", node0.." +
                                      "node" + std::to_string(c.nodes - 1) + ")");
        if (k >= c.node.nics.count)
          fail(key + "." + field, "link to '" + end + "': a node has " +
                                      std::to_string(c.node.nics.count) + " NICs (nic0..nic" +
                                      std::to_string(c.node.nics.count - 1) + ")");
        continue;
      }
      fail(key + "." + field, "link to '" + end +
                                  "', which is neither a switch in network.switches nor "
                                  "node<N>.nic<K>");
    }
    if (l.from == l.to) fail(key + ".to", "a link from '" + l.from + "' to itself");
    // Endpoints are the switch names and the nodes (NICs of one node are joined inside it).
    const std::string a = switches.count(l.from) ? l.from : node_of(l.from);
    const std::string b = switches.count(l.to) ? l.to : node_of(l.to);
    adjacent[a].push_back(b);
    adjacent[b].push_back(a);
  }
  std::vector<std::string> vertices;
  for (int n = 0; n < c.nodes; ++n) vertices.push_back("node" + std::to_string(n));
  vertices.insert(vertices.end(), net.switches.begin(), net.switches.end());
  std::set<std::string> reached{vertices.front()};
  std::deque<std::string> frontier{vertices.front()};
  while (!frontier.empty()) {
    const std::string v = frontier.front();
    frontier.pop_front();
    for (const std::string& w : adjacent[v])
      if (reached.insert(w).second) frontier.push_back(w);
  }
  for (const std::string& v : vertices)
    if (!reached.count(v))
      fail("network.links", "the links leave " + v + " unreachable from " + vertices.front() +
                                (adjacent[v].empty() ? " (no link touches it)" : ""));
}

void check_network(const PlatformConfig& c) {
  const NetworkSpec& net = c.network;
  const NodeSpec& node = c.node;
  if (net.topology == Topology::None) return;
  if (net.topology == Topology::NvlinkNetwork) {
    if (node.nvlink.switches <= 0)
      fail("node.nvlink.switches",
           "topology nvlink-network joins the nodes' NVSwitches, but the node has none");
  } else if (node.nics.count <= 0) {
    fail("node.nics.count", std::string("topology ") + topology_name(net.topology) +
                                " connects the nodes' NICs, but the node has none");
  }
  if (net.topology != Topology::LinkList) check_link(net.link, "network.link");
  latency_ns(net.switch_latency_ns, "network.switch_latency_ns");
  in_range(double(net.switch_buffer_bytes), "network.switch_buffer_bytes", kBufferBytes);

  switch (net.topology) {
    case Topology::FatTree:
    case Topology::RailOptimized:
    case Topology::NvlinkNetwork:
      if (net.tiers != 0 && net.tiers != 2 && net.tiers != 3)
        fail("network.tiers", "must be 2, 3 or 0 (the fewest that fit), got " + std::to_string(net.tiers));
      in_range(net.radix, "network.radix", limits::integers(2, limits::kMaxGpus));
      in_range(net.oversubscription, "network.oversubscription", limits::Range{1, 1024});
      break;
    case Topology::Torus: {
      if (net.torus_dims.size() != 2 && net.torus_dims.size() != 3)
        fail("network.torus_dims", "a torus has 2 or 3 dimensions, got " +
                                       std::to_string(net.torus_dims.size()));
      long product = 1;
      std::string shape;
      for (int d : net.torus_dims) {
        in_range(d, "network.torus_dims", limits::integers(2, limits::kMaxGpus));
        product *= d;
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
      }
      if (product != c.nodes)
        fail("network.torus_dims", "a " + shape + " torus has " + std::to_string(product) +
                                       " switches, one per node, but nodes is " +
                                       std::to_string(c.nodes));
      break;
    }
    case Topology::Dragonfly: {
      in_range(net.dragonfly_groups, "network.dragonfly_groups", limits::integers(2, limits::kMaxGpus));
      in_range(net.dragonfly_routers_per_group, "network.dragonfly_routers_per_group",
               limits::integers(1, limits::kMaxGpus));
      in_range(net.dragonfly_global_links_per_router, "network.dragonfly_global_links_per_router",
               limits::integers(1, limits::kMaxGpus));
      const long routers = long(net.dragonfly_groups) * net.dragonfly_routers_per_group;
      if (c.nodes % routers != 0)
        fail("network.dragonfly_groups",
             std::to_string(net.dragonfly_groups) + " groups x " +
                 std::to_string(net.dragonfly_routers_per_group) + " routers = " +
                 std::to_string(routers) + " routers must divide nodes (" +
                 std::to_string(c.nodes) + ") so every router has the same number of nodes");
      if (long(net.dragonfly_routers_per_group) * net.dragonfly_global_links_per_router <
          net.dragonfly_groups - 1)
        fail("network.dragonfly_global_links_per_router",
             "a group has " +
                 std::to_string(long(net.dragonfly_routers_per_group) *
                                net.dragonfly_global_links_per_router) +
                 " global links but needs one to each of the other " +
                 std::to_string(net.dragonfly_groups - 1) + " groups");
      break;
    }
    case Topology::LinkList:
      check_link_list(c);
      break;
    case Topology::None:
      break;
  }
}

}  // namespace

const char* topology_name(Topology t) {
  for (const auto& s : kTopologies)
    if (s.topology == t) return s.name;
  return "?";
}

std::vector<std::string> topology_names() {
  std::vector<std::string> names;
  for (const auto& s : kTopologies) names.push_back(s.name);
  return names;
}

int PlatformConfig::nvlinks_to_switch(int s) const {
  const NvlinkFabric& f = node.nvlink;
  if (s < 0 || s >= f.switches) return 0;
  if (!f.links_per_switch.empty())
    return s < int(f.links_per_switch.size()) ? f.links_per_switch[size_t(s)] : 0;
  return gpu.nvlink_ports / f.switches;
}

namespace {

// The platform's size: within what tessera builds, and nodes joined by a network.
void check_size(const PlatformConfig& c) {
  in_range(c.nodes, "nodes", limits::integers(1, limits::kMaxGpus));
  in_range(c.node.gpus, "node.gpus", kCount);
  const int64_t gpus = int64_t(c.nodes) * c.node.gpus;
  if (gpus > limits::kMaxGpus)
    fail("nodes", std::to_string(c.nodes) + " nodes x " + std::to_string(c.node.gpus) + " GPUs = " +
                      std::to_string(gpus) + " GPUs, more than the " + std::to_string(limits::kMaxGpus) +
                      " tessera builds (docs/limits.md)");
  if (c.nodes > 1 && c.network.topology == Topology::None)
    fail("nodes", std::to_string(c.nodes) +
                      " nodes, but network.topology is none: nodes reach each other only through "
                      "a network (give one, or nodes: 1)");
  in_range(c.node.nvlink.switches, "node.nvlink.switches", limits::integers(0, limits::kMaxGpusPerNode));
  in_range(c.node.pcie.switches, "node.pcie.switches", kCount);
  in_range(c.node.nics.count, "node.nics.count", limits::integers(0, limits::kMaxGpusPerNode));
}

}  // namespace

// An RTL block choice names a block of this build of the right kind (registry.h).
void check_rtl_block(const std::string& value, rtl::BlockKind kind, const std::string& key) {
  try {
    rtl::resolve(kind, value);
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

void check_arbiter(const ArbiterSpec& a, const std::string& section, bool has_switches, const char* none) {
  in_range(double(a.flit_bytes), section + ".flit_bytes", limits::integers(1, 1 << 20));
  for (size_t i = 0; i < a.ports.size(); ++i)
    in_range(double(a.ports[i]), section + ".arbiter_ports[" + std::to_string(i) + "]",
             limits::integers(0, limits::kMaxGpusPerNode));
  if (!a.rtl()) return;
  if (!has_switches) fail(section + ".arbiter", std::string("an RTL arbiter, but ") + none);
  check_rtl_block(a.arbiter, rtl::BlockKind::Arbiter, section + ".arbiter");
}

void PlatformConfig::validate() const {
  check_size(*this);

  // The GPU type.
  if (gpu.name.empty()) fail("gpu", "no GPU type: name one (gpu: H100-SXM5-80GB) or give a map");
  static const char* dtypes[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
  for (size_t i = 0; i < gpu.peak_tflops.size(); ++i)
    rate(gpu.peak_tflops[i], std::string("gpu.peak_tflops.") + dtypes[i]);
  fraction(gpu.compute_efficiency, "gpu.compute_efficiency");
  in_range(gpu.hbm_capacity_gib, "gpu.hbm_capacity_gib", kGib);
  rate(gpu.hbm_bandwidth_gbps, "gpu.hbm_bandwidth_gbps");
  fraction(gpu.hbm_efficiency, "gpu.hbm_efficiency");
  in_range(gpu.kernel_overhead_us, "gpu.kernel_overhead_us", limits::non_negative(limits::kMaxDelayS * 1e6));
  in_range(gpu.ll_max_bandwidth_gbps, "gpu.ll_max_bandwidth_gbps", limits::non_negative(kRate.hi));
  in_range(gpu.ll128_max_bandwidth_gbps, "gpu.ll128_max_bandwidth_gbps", limits::non_negative(kRate.hi));
  // 0 = NCCL's latencies as tabulated (no clock scaling); else an SM clock of at most 10 GHz.
  in_range(gpu.boost_clock_mhz, "gpu.boost_clock_mhz", limits::non_negative(10000));
  // Chunk times per ring pass: a handful at most (a pipeline deeper than 64 chunks is not a fill).
  in_range(gpu.ring_fill_chunks, "gpu.ring_fill_chunks", limits::non_negative(64));
  // A handshake per slice: at most a millisecond (NCCL's slowest tabulated step is 28 us).
  in_range(gpu.simple_handshake_us, "gpu.simple_handshake_us", limits::non_negative(1000));
  in_range(gpu.p2p_channel_gbps, "gpu.p2p_channel_gbps", limits::non_negative(kRate.hi));
  if (gpu.sm_count < 1) fail("gpu.sm_count", "must be at least 1, got " + std::to_string(gpu.sm_count));
  if (gpu.nvlink_ports < 0)
    fail("gpu.nvlink_ports", "must not be negative, got " + std::to_string(gpu.nvlink_ports));
  in_range(gpu.nvlink_port_bandwidth_gbps, "gpu.nvlink_port_bandwidth_gbps", limits::non_negative(kRate.hi));

  // NVLink fabric.
  const NvlinkFabric& nv = node.nvlink;
  in_range(nv.islands, "node.nvlink.islands", limits::integers(1, limits::kMaxGpusPerNode));
  if (nv.islands > 1 && (nv.switches == 0 || node.gpus % nv.islands != 0))
    fail("node.nvlink.islands", std::to_string(nv.islands) + " islands need NVSwitches and must divide the node's " +
                                    std::to_string(node.gpus) + " GPUs");
  if (nv.islands > 1 && network.topology == Topology::NvlinkNetwork)
    fail("node.nvlink.islands", "an NVLink network joins whole nodes: islands must be 1");
  if (nv.switches == 0) {
    if (!nv.links_per_switch.empty())
      fail("node.nvlink.links_per_switch", "given, but node.nvlink.switches is 0 (no NVLink)");
    if (nv.in_switch_reduction)
      fail("node.nvlink.in_switch_reduction", "needs NVSwitches, but node.nvlink.switches is 0");
  } else {
    if (gpu.nvlink_ports <= 0)
      fail("node.nvlink.switches", "the GPU type " + gpu.name + " has no NVLink ports");
    if (nv.links_per_switch.empty()) {
      if (gpu.nvlink_ports % nv.switches != 0)
        fail("node.nvlink.switches",
             std::to_string(nv.switches) + " switches do not split the GPU's " +
                 std::to_string(gpu.nvlink_ports) +
                 " NVLink ports evenly; give node.nvlink.links_per_switch");
    } else {
      if (int(nv.links_per_switch.size()) != nv.switches)
        fail("node.nvlink.links_per_switch",
             "has " + std::to_string(nv.links_per_switch.size()) + " entries for " +
                 std::to_string(nv.switches) + " switches");
      int sum = 0;
      std::string terms;
      for (int l : nv.links_per_switch) {
        if (l < 1)
          fail("node.nvlink.links_per_switch", "every switch needs at least 1 link, got " +
                                                   std::to_string(l));
        sum += l;
        terms += (terms.empty() ? "" : "+") + std::to_string(l);
      }
      if (sum != gpu.nvlink_ports)
        fail("node.nvlink.links_per_switch",
             "the links add up to " + terms + " = " + std::to_string(sum) + ", but " + gpu.name +
                 " has " + std::to_string(gpu.nvlink_ports) + " NVLink ports");
    }
    check_link(nv.link, "node.nvlink.link");
    latency_ns(nv.switch_latency_ns, "node.nvlink.switch_latency_ns");
  }

  // PCIe tree.
  const PcieTree& pcie = node.pcie;
  if (node.gpus % pcie.switches != 0)
    fail("node.pcie.switches", std::to_string(pcie.switches) +
                                   " PCIe switches do not divide the node's " +
                                   std::to_string(node.gpus) + " GPUs evenly");
  if (node.nics.count % pcie.switches != 0)
    fail("node.pcie.switches", std::to_string(pcie.switches) +
                                   " PCIe switches do not divide the node's " +
                                   std::to_string(node.nics.count) + " NICs evenly");
  check_link(pcie.link, "node.pcie.link");
  check_link(pcie.host_link, "node.pcie.host_link");
  latency_ns(pcie.switch_latency_ns, "node.pcie.switch_latency_ns");
  latency_ns(pcie.root_complex_latency_ns, "node.pcie.root_complex_latency_ns");

  // NICs.
  const NicSpec& nic = node.nics;
  if (nic.count > 0) {
    rate(nic.line_rate_gbit_per_s, "node.nics.line_rate_gbit_per_s");
    if (nic.mtu_bytes == 0) fail("node.nics.mtu_bytes", "must be positive, got 0");
    latency_ns(nic.message_overhead_ns, "node.nics.message_overhead_ns");
    latency_ns(nic.latency_ns, "node.nics.latency_ns");
  }

  // RTL blocks (docs/cosim.md).
  check_arbiter(node.nvswitch, "node.nvswitch", nv.switches > 0, "the node has no NVSwitch (node.nvlink.switches is 0)");
  check_arbiter(network.switch_arbiter, "network.switch", network.topology != Topology::None,
                "there is no network (network.topology is none)");
  in_range(double(nic.flit_bytes), "node.nics.flit_bytes", limits::integers(1, 1 << 20));
  if (nic.rate_limited()) {
    if (nic.count == 0) fail("node.nics.rate_limiter", "an RTL rate limiter, but the node has no NICs");
    rate(nic.rate_limit_gbit_per_s, "node.nics.rate_limit_gbit_per_s");
    in_range(double(nic.rate_limit_burst_bytes), "node.nics.rate_limit_burst_bytes", kBufferBytes);
    check_rtl_block(nic.rate_limiter, rtl::BlockKind::RateLimiter, "node.nics.rate_limiter");
  }

  in_range(node.host.memory_gib, "node.host.memory_gib", kGib);
  rate(node.host.memory_bandwidth_gb_per_s, "node.host.memory_bandwidth_gb_per_s");
  in_range(double(gpu_buffer_bytes), "gpu_buffer_bytes", kBufferBytes);
  in_range(double(switch_buffer_bytes), "switch_buffer_bytes", kBufferBytes);

  check_network(*this);
}

}  // namespace tessera::platforms
