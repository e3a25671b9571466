#include "sc_main/platform_options.h"

#include "platforms/platform.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "sc_main/input_error.h"

namespace po = boost::program_options;

namespace tessera::app {

po::options_description platform_options(PlatformSettings& s) {
  po::options_description platform("platform");
  platform.add_options()
      ("platform", po::value(&s.platform)->default_value("dgx-h100"), "built-in platform (see 'tessera platforms')")
      ("nodes", po::value(&s.nodes), "number of nodes (default: the platform's)")
      ("gpus", po::value(&s.gpus), "GPUs per node (default: the platform's)")
      ("nvlink-bandwidth-gbps", po::value(&s.nvlink_bandwidth_gbps), "bandwidth per NVLink per direction, GB/s")
      ("kernel-overhead-us", po::value(&s.kernel_overhead_us), "launch overhead per kernel, microseconds");
  return platform;
}

platforms::PlatformConfig build_platform(const PlatformSettings& s) {
  platforms::PlatformConfig p = platforms::builtin_platform(s.platform);
  auto positive = [](double v, const char* option) {
    if (v <= 0) throw InputError(std::string("--") + option + " must be positive, got " + std::to_string(v));
  };
  if (s.nodes != 0) positive(double(s.nodes), "nodes"), p.nodes = int(s.nodes);
  if (s.gpus != 0) positive(double(s.gpus), "gpus"), p.node.gpus = int(s.gpus);
  if (s.nvlink_bandwidth_gbps != 0)
    positive(s.nvlink_bandwidth_gbps, "nvlink-bandwidth-gbps"), p.node.nvlink.link.bandwidth_gb_per_s = s.nvlink_bandwidth_gbps;
  if (s.kernel_overhead_us != -1) {
    if (s.kernel_overhead_us < 0) throw InputError("--kernel-overhead-us must not be negative");
    p.gpu.kernel_overhead_us = s.kernel_overhead_us;
  }
  try {
    p.validate();
    const platforms::PlatformGraph graph = platforms::generate_topology(p);
    const platforms::Routing routing(graph);
  } catch (const platforms::PlatformError& e) {
    throw InputError("platform " + p.name + ": " + e.key() + ": " + e.what());
  }
  return p;
}

}  // namespace tessera::app
