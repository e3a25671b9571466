#include "platforms/platform.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/nic/nic.h"
#include "models/rtl/arbiter_port.h"
#include "models/rtl/rate_limiter_port.h"
#include "models/rtl/registry.h"
#include "models/switch/network_switch.h"
#include "models/switch/nvswitch.h"
#include "models/switch/pcie_switch.h"
#include "models/switch/root_complex.h"

namespace tessera::platforms {

namespace {
// Payload bytes/s of a link sending back-to-back full packets (no sc_time here: callable before
// SystemC has its time resolution).
double payload_rate(double bytes_per_s, double packet_payload, double packet_overhead) {
  return bytes_per_s * (packet_payload > 0 ? packet_payload / (packet_payload + packet_overhead) : 1.0);
}
double payload_rate(const LinkSpec& l) {
  return payload_rate(l.bandwidth_gb_per_s * 1e9, l.max_packet_bytes, l.packet_overhead_bytes);
}
}  // namespace

models::FabricFacts fabric_facts(const PlatformConfig& c) {
  models::FabricFacts f;
  // All the GPU's NVLinks.
  const LinkSpec& link = c.node.nvlink.link;
  const double bandwidth = link.bandwidth_gb_per_s > 0 ? link.bandwidth_gb_per_s : c.gpu.nvlink_port_bandwidth_gbps;
  int links = 0;
  for (int s = 0; s < c.node.nvlink.switches; ++s) links += c.nvlinks_to_switch(s);
  f.gpu_bandwidth = links * payload_rate(bandwidth * 1e9, link.max_packet_bytes, link.packet_overhead_bytes);
  const double pcie = payload_rate(c.node.pcie.link);
  if (links == 0) f.gpu_bandwidth = pcie;  // no NVLink: peer traffic crosses PCIe
  f.hop_latency_s = (2 * link.latency_ns + c.node.nvlink.switch_latency_ns) * 1e-9;
  f.in_switch_reduction = c.node.nvlink.in_switch_reduction;
  f.sm_count = c.gpu.sm_count;
  f.sm_clock_mhz = c.gpu.boost_clock_mhz;
  f.ll_max_bandwidth = c.gpu.ll_max_bandwidth_gbps * 1e9;
  f.ll128_max_bandwidth = c.gpu.ll128_max_bandwidth_gbps * 1e9;
  f.ring_fill_chunks = c.gpu.ring_fill_chunks;
  f.simple_reads_peer = c.gpu.simple_reads_peer;
  f.simple_handshake_s = c.gpu.simple_handshake_us * 1e-6;
  // (An NVLink write's rate: GPUs without NVLink send to their peers through PCIe.)
  f.p2p_channel_rate = links > 0 ? c.gpu.p2p_channel_gbps * 1e9 : 0.0;

  // Across nodes.
  f.gpus_per_node = c.node.gpus;
  const NicSpec& nic = c.node.nics;
  const Topology topology = c.network.topology;
  if (topology == Topology::NvlinkNetwork) {
    // The node's NVSwitches are its gateways, their uplinks NVLinks (network.link) to the
    // second tier, fewer than the GPUs' by the oversubscription (topology.cpp).
    double uplinks = 0;
    for (int s = 0; s < c.node.nvlink.switches; ++s)
      uplinks += std::max(1.0, std::floor(double(c.node.gpus) * c.nvlinks_to_switch(s) / c.network.oversubscription + 1e-9));
    f.node_network_bandwidth = uplinks * payload_rate(c.network.link);
    f.gpu_network_bandwidth = std::min(f.gpu_bandwidth, f.node_network_bandwidth);
    f.network_latency_s = (2 * link.latency_ns + 2 * c.network.link.latency_ns + 2 * c.node.nvlink.switch_latency_ns +
                           c.network.switch_latency_ns) * 1e-9;
    f.network_hops = 4;  // GPU, node NVSwitch, second tier, node NVSwitch, GPU
  } else if (topology != Topology::None && nic.count > 0) {
    // A GPU reaches the network through its PCIe port and the NICs on its PCIe switch; the
    // node through all its NICs: GPU -> PCIe switch -> NIC, a network switch, and back.
    const double nic_rate = payload_rate(nic.line_rate_gbit_per_s / 8 * 1e9, nic.mtu_bytes, nic.header_bytes);
    const int near = std::max(1, nic.count / std::max(1, c.node.pcie.switches));
    f.gpu_network_bandwidth = std::min(pcie, near * nic_rate);
    f.node_network_bandwidth = nic.count * nic_rate;
    const double pcie_ns = 2 * c.node.pcie.link.latency_ns + c.node.pcie.switch_latency_ns + nic.latency_ns;
    f.network_latency_s = (2 * pcie_ns + 2 * c.network.link.latency_ns + c.network.switch_latency_ns) * 1e-9;
    f.network_hops = 6;  // GPU, PCIe switch, NIC, network switch, NIC, PCIe switch, GPU
    f.in_network_reduction = c.network.in_network_reduction;
  }
  return f;
}

const char* fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::Flow: return "flow";
    case Fidelity::Analytic: return "analytic";
    default: return "packet";
  }
}

bool parse_fidelity(const std::string& name, Fidelity& out) {
  if (name == "packet") return out = Fidelity::Packet, true;
  if (name == "flow") return out = Fidelity::Flow, true;
  if (name == "analytic") return out = Fidelity::Analytic, true;
  return false;
}

struct Platform::NodeRouter : models::Router {
  NodeRouter(const Routing& r, uint32_t n, uint32_t d) : routing(r), node(n), device(d) {}
  unsigned route(protocol::FabricTransfer& t) const override {
    return routing.node_next(node, device, t);
  }
  const Routing& routing;
  uint32_t node, device;
};

struct Platform::NetworkRouter : models::Router {
  NetworkRouter(const Routing& r, uint32_t d) : routing(r), device(d) {}
  unsigned route(protocol::FabricTransfer& t) const override { return routing.network_next(device, t); }
  const Routing& routing;
  uint32_t device;
};

namespace {

// A level of the module hierarchy (a node, the network): the modules built while it is
// current become its children, so no module has hundreds of thousands of children.
class Group : public sc_core::sc_module {
 public:
  explicit Group(sc_core::sc_module_name name) : sc_module(name) {}
};

class InGroup {
 public:
  explicit InGroup(sc_core::sc_module& group) { sc_core::sc_get_curr_simcontext()->hierarchy_push(&group); }
  ~InGroup() { sc_core::sc_get_curr_simcontext()->hierarchy_pop(); }
};

unsigned chunks_in(uint64_t bytes, uint64_t chunk) {
  return static_cast<unsigned>(std::max<uint64_t>(1, bytes / chunk));
}

std::string module_name(const std::string& graph_name) {
  std::string s = graph_name;
  std::replace(s.begin(), s.end(), '.', '_');
  std::replace(s.begin(), s.end(), '(', '_');
  std::replace(s.begin(), s.end(), ')', '_');
  std::replace(s.begin(), s.end(), ',', '_');
  return s;
}

}  // namespace

Platform::Platform(sc_core::sc_module_name name, const PlatformConfig& config,
                   const workloads::Job& job, protocol::PayloadPool& pool,
                   const models::CollectiveEngineConfig& engine, Fidelity fidelity,
                   std::shared_ptr<const RoutedTopology> routed)
    : sc_module(name), config_(config), fidelity_(fidelity), routed_(std::move(routed)) {
  config_.validate();
  if (fidelity_ == Fidelity::Analytic)
    throw std::logic_error("analytic fidelity builds no platform (analytic::cost_iteration)");
  if (static_cast<size_t>(config_.gpu_count()) != job.ranks.size())
    throw std::invalid_argument("the workload has " + std::to_string(job.ranks.size()) +
                                " ranks but the platform has " +
                                std::to_string(config_.gpu_count()) + " GPUs");
  if (!routed_) routed_ = std::make_shared<const RoutedTopology>(config_);
  if (routed_->graph.nodes != static_cast<uint32_t>(config_.nodes) ||
      routed_->graph.node.gpus != static_cast<uint32_t>(config_.node.gpus))
    throw std::logic_error("the routed topology was made from another platform");
  const PlatformGraph& topology = routed_->graph;
  const Routing& routing = routed_->routing;
  trees_ = std::make_unique<AggregationTrees>(topology, routing);
  const NodeTemplate& nt = topology.node;
  const Graph& ng = nt.graph;
  const Network& net = topology.network;
  // What the collective engines know of this fabric: the node size and the tuner's facts.
  models::CollectiveEngineConfig collectives = engine;
  if (collectives.gpus_per_node == 0) collectives.gpus_per_node = config_.node.gpus;
  collectives.fabric = fabric_facts(config_);
  collectives.trees = trees_.get();
  const bool packet = fidelity_ == Fidelity::Packet;
  if (!packet && config_.uses_rtl())
    throw std::invalid_argument("RTL blocks sit at ports, which flow fidelity does not have: run them with --fidelity packet");
  // Flow fidelity: schedules run in their steady state; the flow fabric reduces in the switches
  // as the switch modules do (models/flow/flow_fabric.h).
  if (!packet) collectives.steady_state = true;
  collectives.communicators = std::make_shared<const models::CommunicatorTable>(
      job, collectives.gpus_per_node, collectives.dimensions, collectives.fabric.gpus_per_node);
  const uint64_t chunk = std::max<uint64_t>(1, collectives.chunk_bytes);
  const uint32_t nodes = topology.nodes;

  // Uplink ports of each template device (gateways only).
  std::vector<uint32_t> uplinks(ng.devices.size(), 0);
  for (size_t g = 0; g < nt.gateways.size(); ++g) uplinks[nt.gateways[g]] = nt.uplinks[g];

  node_module_.assign(ng.devices.size(), 0);
  for (uint32_t v = nt.gpus; v < ng.devices.size(); ++v) node_module_[v] = node_crossbars_++;
  gpus_.reserve(topology.gpu_count());
  switches_.reserve(size_t(nodes) * node_crossbars_ + net.switches());

  models::GpuConfig gpu_config;
  gpu_config.spec = config_.gpu;
  gpu_config.ingress_buffer_chunks = chunks_in(config_.gpu_buffer_bytes, chunk);
  gpu_config.collectives = std::make_shared<const models::CollectiveSettings>(collectives);
  collective_latencies_ = std::make_unique<models::CollectiveLatencies>("collective_latencies");
  groups_.reserve(nodes + 1);
  for (uint32_t n = 0; n < nodes; ++n) {
    groups_.push_back(std::make_unique<Group>(("node" + std::to_string(n)).c_str()));
    InGroup in_node(*groups_.back());
    for (uint32_t v = 0; v < nt.gpus; ++v) {
      gpu_config.fabric_ports = packet ? ng.ports(v) : 0;
      const int rank = static_cast<int>(n * nt.gpus + v);
      gpus_.push_back(std::make_unique<models::Gpu>(("gpu" + std::to_string(rank)).c_str(), rank,
                                                    gpu_config, job, pool, *collective_latencies_));
      node_routers_.emplace_back(routing, n, v);
      gpus_.back()->set_router(node_routers_.back());
    }
    if (!packet) continue;
    for (uint32_t v = nt.gpus; v < ng.devices.size(); ++v) {
      const GraphDevice& d = ng.devices[v];
      models::CrossbarConfig cc;
      cc.ports = ng.ports(v) + uplinks[v];
      cc.buffer_chunks = chunks_in(config_.switch_buffer_bytes, chunk);
      cc.hop_latency = sc_core::sc_time(d.latency_ns, sc_core::SC_NS);
      const std::string mname = module_name(d.name);
      std::unique_ptr<models::Crossbar> module;
      switch (d.kind) {
        case DeviceKind::NvSwitch:
          module = std::make_unique<models::NvSwitch>(
              mname.c_str(), models::NvSwitchConfig{cc, config_.node.nvlink.in_switch_reduction, &pool});
          break;
        case DeviceKind::Nic: {
          models::NicConfig nc;
          nc.crossbar = cc;
          nc.network_port = ng.ports(v);
          nc.message_overhead = sc_core::sc_time(config_.node.nics.message_overhead_ns, sc_core::SC_NS);
          module = std::make_unique<models::Nic>(mname.c_str(), nc);
          break;
        }
        case DeviceKind::RootComplex: {
          models::RootComplexConfig rc;
          rc.crossbar = cc;
          rc.memory.capacity_bytes = config_.node.host.memory_gib * double(1ull << 30);
          rc.memory.bandwidth_bytes_per_s = config_.node.host.memory_bandwidth_gb_per_s * 1e9;
          rc.peer_through_memory = config_.node.host.peer_through_memory;
          module = std::make_unique<models::RootComplex>(mname.c_str(), rc);
          break;
        }
        default: module = std::make_unique<models::PcieSwitch>(mname.c_str(), cc); break;
      }
      node_routers_.emplace_back(routing, n, v);
      module->set_router(node_routers_.back());
      switches_.push_back(std::move(module));
    }
  }
  if (!packet) {
    flow_paths_ = std::make_unique<RoutedPaths>(
        topology, routing, sc_core::sc_time(config_.node.nics.message_overhead_ns, sc_core::SC_NS));
    flow_fabric_ = std::make_unique<models::FlowFabric>("fabric", *flow_paths_, &pool);
    flow_fabric_->never_fill(flow_paths_->links_that_cannot_fill(config_.network.in_network_reduction));
    for (auto& gpu : gpus_) {
      flow_fabric_->attach(static_cast<uint32_t>(gpu->rank()), gpu->collectives());
      gpu->set_flow_fabric(*flow_fabric_);
    }
    return;
  }
  groups_.push_back(std::make_unique<Group>("network"));
  InGroup in_network(*groups_.back());
  for (uint32_t x = net.gateways; x < net.graph.devices.size(); ++x) {
    const GraphDevice& d = net.graph.devices[x];
    models::CrossbarConfig cc;
    cc.ports = net.graph.ports(x);
    cc.buffer_chunks = chunks_in(config_.network.switch_buffer_bytes, chunk);
    cc.hop_latency = sc_core::sc_time(d.latency_ns, sc_core::SC_NS);
    std::unique_ptr<models::Crossbar> module;
    if (d.kind == DeviceKind::NvSwitch)
      module = std::make_unique<models::NvSwitch>(
          module_name(d.name).c_str(), models::NvSwitchConfig{cc, config_.node.nvlink.in_switch_reduction, &pool});
    else
      module = std::make_unique<models::NetworkSwitch>(
          module_name(d.name).c_str(),
          models::NetworkSwitchConfig{cc, config_.network.in_network_reduction, x, &pool});
    network_routers_.emplace_back(routing, x);
    module->set_router(network_routers_.back());
    switches_.push_back(std::move(module));
  }

  // Links inside every node.
  links_.reserve(size_t(nodes) * ng.links.size() * 2 + net.graph.links.size() * 2);
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::string prefix = "node" + std::to_string(n) + ".";
    for (const GraphLink& l : ng.links) {
      connect(egress(n, l.a, l.a_port), ingress(n, l.b, l.b_port),
              prefix + ng.devices[l.a].name + ".out" + std::to_string(l.a_port), l.timing, l.kind);
      connect(egress(n, l.b, l.b_port), ingress(n, l.a, l.a_port),
              prefix + ng.devices[l.b].name + ".out" + std::to_string(l.b_port), l.timing, l.kind);
    }
  }
  // The network: a device below net.gateways is gateway d of node d / per_node.
  const uint32_t per_node = topology.gateways_per_node();
  auto net_egress = [&](uint32_t x, uint32_t port) -> models::EgressPort& {
    if (x >= net.gateways) return switches_[size_t(nodes) * node_crossbars_ + x - net.gateways]->egress(port);
    const uint32_t v = nt.gateways[x % per_node];
    return egress(x / per_node, v, ng.ports(v) + port);
  };
  auto net_ingress = [&](uint32_t x, uint32_t port) -> models::IngressPort& {
    if (x >= net.gateways) return switches_[size_t(nodes) * node_crossbars_ + x - net.gateways]->ingress(port);
    const uint32_t v = nt.gateways[x % per_node];
    return ingress(x / per_node, v, ng.ports(v) + port);
  };
  for (const GraphLink& l : net.graph.links) {
    connect(net_egress(l.a, l.a_port), net_ingress(l.b, l.b_port),
            net.graph.devices[l.a].name + ".up" + std::to_string(l.a_port), l.timing, l.kind);
    connect(net_egress(l.b, l.b_port), net_ingress(l.a, l.a_port),
            net.graph.devices[l.b].name + ".up" + std::to_string(l.b_port), l.timing, l.kind);
  }
  deadlock_free_buffers(chunk);
  if (config_.uses_rtl()) attach_rtl(chunk);
}

void Platform::deadlock_free_buffers(uint64_t chunk_bytes) {
  const Network& net = routed_->graph.network;
  const bool torus = !net.torus_dims.empty();
  if (!torus && net.dragonfly_routers_per_group == 0) return;
  const uint64_t buffer = config_.network.switch_buffer_bytes;
  if (buffer / chunk_bytes < 2)
    throw PlatformError("network.switch_buffer_bytes",
                        std::to_string(buffer) + " bytes hold fewer than two chunks of " + std::to_string(chunk_bytes) +
                            " bytes (--chunk-kib); a " + (torus ? "torus" : "dragonfly") +
                            " keeps one of each switch port's slots for the chunks that break a cycle of buffers");
  const Graph& g = net.graph;
  const size_t first = size_t(routed_->graph.nodes) * node_crossbars_;
  auto dimension = [&](uint32_t x, uint32_t w) {  // of the torus link x-w, else -1
    return w < net.gateways ? -1 : net.first_differing_dimension(x - net.gateways, w - net.gateways);
  };
  auto group = [&](uint32_t x) { return net.dragonfly_group(x - net.gateways); };
  for (uint32_t x = net.gateways; x < g.devices.size(); ++x) {
    models::Crossbar& sw = *switches_[first + x - net.gateways];
    for (uint32_t out = 0; out < g.ports(x); ++out) {
      const uint32_t to = g.neighbor(x, out);
      if (to < net.gateways) continue;  // to a NIC: chunks leave the network there
      std::vector<bool> may_take_last(g.ports(x), false);
      if (torus) {
        // Bubble flow control on each ring of three switches or more (a ring of two is one
        // link: no cycle): a chunk that goes on along the ring, in from the ring's switch on
        // the other side, may take the last slot.
        const int d = dimension(x, to);
        if (d < 0 || net.torus_dims[size_t(d)] < 3) continue;
        for (uint32_t in = 0; in < g.ports(x); ++in) {
          const uint32_t from = g.neighbor(x, in);
          may_take_last[in] = from != to && dimension(x, from) == d;
        }
      } else {
        // A dragonfly's local link: the last slot is for chunks that came over a global link
        // (they leave the network at the next router).
        if (group(to) != group(x)) continue;
        for (uint32_t in = 0; in < g.ports(x); ++in) {
          const uint32_t from = g.neighbor(x, in);
          may_take_last[in] = from >= net.gateways && group(from) != group(x);
        }
      }
      sw.egress(out).reserve_last_slot(std::move(may_take_last));
    }
  }
}

void Platform::attach_rtl(uint64_t chunk_bytes) {
  const PlatformGraph& topology = routed_->graph;
  const Graph& ng = topology.node.graph;
  const Network& net = topology.network;
  // The ports `spec` names on a switch of `ports` ports.
  auto selected = [](const ArbiterSpec& spec, unsigned ports, const std::string& key, const std::string& module) {
    std::vector<unsigned> out;
    if (spec.ports.empty())
      for (unsigned p = 0; p < ports; ++p) out.push_back(p);
    for (int p : spec.ports) {
      if (p < 0 || unsigned(p) >= ports)
        throw std::invalid_argument(key + ".arbiter_ports: " + module + " has no port " + std::to_string(p) +
                                    " (ports 0 to " + std::to_string(ports - 1) + ")");
      out.push_back(unsigned(p));
    }
    return out;
  };
  auto arbiters = [&](models::Crossbar& module, const ArbiterSpec& spec, const std::string& key) {
    const rtl::BlockInfo& block = rtl::resolve(rtl::BlockKind::Arbiter, spec.arbiter);
    InGroup in_module(module);
    for (unsigned p : selected(spec, module.ports(), key, module.name())) {
      models::EgressPort& port = module.egress(p);
      rtl_ports_.push_back(std::make_unique<rtl::ArbiterPort>(
          ("out" + std::to_string(p) + "_rtl").c_str(), port, block,
          rtl::Transactor::clock_period(port, spec.flit_bytes)));
    }
  };
  const NicSpec& nic = config_.node.nics;
  for (uint32_t n = 0; n < topology.nodes; ++n)
    for (uint32_t v = topology.node.gpus; v < ng.devices.size(); ++v) {
      models::Crossbar& module = *switches_[size_t(n) * node_crossbars_ + node_module_[v]];
      if (ng.devices[v].kind == DeviceKind::NvSwitch && config_.node.nvswitch.rtl())
        arbiters(module, config_.node.nvswitch, "node.nvswitch");
      if (ng.devices[v].kind != DeviceKind::Nic || !nic.rate_limited()) continue;
      const rtl::BlockInfo& block = rtl::resolve(rtl::BlockKind::RateLimiter, nic.rate_limiter);
      InGroup in_module(module);
      for (unsigned p = ng.ports(v); p < module.ports(); ++p) {
        models::EgressPort& port = module.egress(p);
        const rtl::RateLimit limit = rtl::RateLimiterPort::limit_for(
            port, nic.rate_limit_gbit_per_s / 8 * 1e9, nic.rate_limit_burst_bytes, nic.flit_bytes);
        const double chunk_flits = std::ceil(port.link()->timing().wire_bytes(chunk_bytes) / nic.flit_bytes);
        if (chunk_flits > limit.burst_flits)
          throw std::invalid_argument("node.nics.rate_limit_burst_bytes: " + std::to_string(nic.rate_limit_burst_bytes) +
                                      " bytes hold less than one chunk on the wire (" +
                                      std::to_string(uint64_t(chunk_flits) * nic.flit_bytes) +
                                      " bytes): it could never leave");
        rtl_ports_.push_back(std::make_unique<rtl::RateLimiterPort>(
            ("out" + std::to_string(p) + "_rtl").c_str(), port, block,
            rtl::Transactor::clock_period(port, nic.flit_bytes), limit));
      }
    }
  if (!config_.network.switch_arbiter.rtl()) return;
  for (uint32_t x = net.gateways; x < net.graph.devices.size(); ++x)
    arbiters(*switches_[size_t(topology.nodes) * node_crossbars_ + x - net.gateways], config_.network.switch_arbiter,
             "network.switch");
}

Platform::~Platform() = default;

models::EgressPort& Platform::egress(uint32_t node, uint32_t device, uint32_t port) {
  if (device < routed_->graph.node.gpus) return gpus_[node * routed_->graph.node.gpus + device]->egress(port);
  return switches_[size_t(node) * node_crossbars_ + node_module_[device]]->egress(port);
}

models::IngressPort& Platform::ingress(uint32_t node, uint32_t device, uint32_t port) {
  if (device < routed_->graph.node.gpus) return gpus_[node * routed_->graph.node.gpus + device]->ingress(port);
  return switches_[size_t(node) * node_crossbars_ + node_module_[device]]->ingress(port);
}

void Platform::connect(models::EgressPort& from, models::IngressPort& to, const std::string& name,
                       const protocol::LinkTiming& timing, LinkKind kind) {
  links_.push_back(std::make_unique<models::Link>(name, timing, link_kind_name(kind)));
  from.socket.bind(to.socket);
  from.attach(*links_.back());
  from.set_downstream(to);
}

}  // namespace tessera::platforms
