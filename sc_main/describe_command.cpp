// tessera describe: the instantiated hierarchy of a platform (module and link counts), its
// bisection bandwidth, and the route between two GPUs with its bottleneck.
#include "sc_main/describe_command.h"

#include <cstdio>
#include <map>

#include "models/rtl/registry.h"
#include "platforms/analysis.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "sc_main/input_error.h"
#include "sc_main/platform_options.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

std::string gbps(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bytes_per_s / 1e9);
  return buf;
}

// The RTL blocks the platform puts at ports (docs/cosim.md).
void describe_rtl(const platforms::PlatformConfig& c, std::ostream& out) {
  if (!c.uses_rtl()) return;
  out << "rtl blocks (docs/cosim.md):\n";
  auto block = [&](const char* key, rtl::BlockKind kind, const std::string& value) {
    const rtl::BlockInfo& b = rtl::resolve(kind, value);
    out << "  " << key << ": " << b.name << " (" << rtl::block_kind_name(b.kind);
    if (b.kind == rtl::BlockKind::Arbiter) out << ", PORTS " << b.ports;
    out << ", " << b.top << " from " << b.source << ")";
  };
  auto arbiter = [&](const char* key, const platforms::ArbiterSpec& a) {
    if (!a.rtl()) return;
    block(key, rtl::BlockKind::Arbiter, a.arbiter);
    std::string ports = "all";
    if (!a.ports.empty()) {
      ports.clear();
      for (int p : a.ports) ports += (ports.empty() ? "" : ", ") + std::to_string(p);
    }
    out << "; ports " << ports << "; " << a.flit_bytes << "-byte flits\n";
  };
  arbiter("node.nvswitch.arbiter", c.node.nvswitch);
  arbiter("network.switch.arbiter", c.network.switch_arbiter);
  if (c.node.nics.rate_limited()) {
    block("node.nics.rate_limiter", rtl::BlockKind::RateLimiter, c.node.nics.rate_limiter);
    out << "; " << c.node.nics.rate_limit_gbit_per_s << " Gb/s, burst " << c.node.nics.rate_limit_burst_bytes
        << " bytes; " << c.node.nics.flit_bytes << "-byte flits\n";
  }
}

}  // namespace

int command_describe(const std::vector<std::string>& args, std::ostream& out) {
  PlatformSettings settings;
  int64_t from = 0, to = -1;
  po::options_description desc("tessera describe [options]");
  desc.add_options()("help,h", "this help");
  desc.add(platform_options(settings));
  po::options_description path("path");
  path.add_options()
      ("from", po::value(&from)->default_value(0), "GPU the path starts at")
      ("to", po::value(&to), "GPU the path ends at (default: the last GPU)");
  desc.add(path);
  po::variables_map vm;
  if (!parse_command_options(args, desc, out, vm)) return 0;
  std::shared_ptr<const platforms::RoutedTopology> routed;
  const platforms::PlatformConfig config = build_platform(settings, &routed);
  const platforms::PlatformGraph& graph = routed->graph;
  const platforms::Routing& routing = routed->routing;
  const int64_t gpus = graph.gpu_count();
  if (to < 0) to = gpus - 1;
  if (from < 0 || from >= gpus || to >= gpus)
    throw InputError("--from/--to: GPU " + std::to_string(from < 0 || from >= gpus ? from : to) +
                     " does not exist (the platform has " + std::to_string(gpus) + " GPUs)");

  out << "platform " << config.name << ": " << config.description << "\n";
  out << "  " << config.nodes << " node" << (config.nodes == 1 ? "" : "s") << " x " << config.node.gpus
      << " " << config.gpu.name << " = " << gpus << " GPUs; network: "
      << platforms::topology_name(config.network.topology) << "\n";

  const platforms::Graph& ng = graph.node.graph;
  out << "node (each of " << config.nodes << "):\n";
  for (uint32_t v = 0; v < ng.devices.size(); ++v) {
    std::map<std::string, std::pair<int, double>> peers;  // neighbor name -> (links, bandwidth)
    for (uint32_t p = 0; p < ng.ports(v); ++p) {
      const platforms::GraphLink& l = ng.links[ng.devices[v].port_links[p]];
      auto& e = peers[ng.devices[ng.neighbor(v, p)].name];
      e.first += 1;
      e.second = l.timing.bandwidth_bytes_per_s;
    }
    out << "  " << ng.devices[v].name << " (" << platforms::device_kind_name(ng.devices[v].kind) << "):";
    for (const auto& [name, e] : peers) out << " " << name << " " << gbps(e.second);
    for (size_t g = 0; g < graph.node.gateways.size(); ++g)
      if (graph.node.gateways[g] == v)
        out << "; " << graph.node.uplinks[g] << " network uplink(s) " << gbps(graph.node.uplink_timing.bandwidth_bytes_per_s);
    if (ng.devices[v].kind == platforms::DeviceKind::RootComplex)
      out << "; host memory " << config.node.host.memory_gib << " GiB, "
          << gbps(config.node.host.memory_bandwidth_gb_per_s * 1e9)
          << (config.node.host.peer_through_memory ? ", stages peer traffic" : "");
    out << "\n";
  }
  const platforms::Inventory inv = platforms::inventory(graph);
  out << "modules:\n";
  for (const auto& [kind, count] : inv.devices) out << "  " << kind << " " << count << "\n";
  out << "links (each a pair of one-way links):\n";
  for (const auto& [kind, count] : inv.links) out << "  " << kind << " " << count << "\n";
  out << "bisection bandwidth " << gbps(platforms::bisection_bandwidth(graph)) << " per direction ("
      << (config.nodes > 1 ? "first half of the nodes to the second" : "first half of the GPUs to the second")
      << ")\n";
  if (config.nodes > 1) {
    // How the network routes (docs/platforms.md, "Deadlock-free routes").
    const platforms::Network& net = graph.network;
    out << "routes across nodes: "
        << (!net.torus_dims.empty() ? "dimension order (x, then y, then z), bubble flow control on each ring"
            : net.dragonfly_routers_per_group > 0
                ? "local, global, local (one global link), a local link's last slot kept for chunks past it"
                : "every shortest path (ECMP)")
        << "\n";
  }
  describe_rtl(config, out);

  const std::vector<platforms::Hop> hops =
      platforms::route(graph, routing, static_cast<uint32_t>(from), static_cast<uint32_t>(to));
  double bottleneck = 0, latency = 0;
  out << "path gpu" << from << " -> gpu" << to << " (" << hops.size() << " hops):\n";
  for (const platforms::Hop& h : hops) {
    out << "  " << h.from << " -> " << h.to << "  " << h.link_kind << " " << gbps(h.bandwidth_bytes_per_s) << "\n";
    bottleneck = bottleneck == 0 ? h.bandwidth_bytes_per_s : std::min(bottleneck, h.bandwidth_bytes_per_s);
    latency += h.latency_s;
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "  bottleneck %s, latency %.0f ns\n", gbps(bottleneck).c_str(), latency * 1e9);
  out << buf;
  return 0;
}

}  // namespace tessera::app
