#include "sc_main/platform_options.h"

#include "platforms/platform_file.h"
#include "sc_main/input_error.h"

namespace po = boost::program_options;

namespace tessera::app {

po::options_description platform_options(PlatformSettings& s) {
  po::options_description platform("platform");
  platform.add_options()
      ("platform", po::value(&s.platform)->default_value("dgx-h100"), "a shipped platform (see 'tessera platforms') or a platform YAML file")
      ("nodes", po::value(&s.nodes), "number of nodes (default: the platform's)")
      ("gpus", po::value(&s.gpus), "GPUs per node (default: the platform's)")
      ("set", po::value(&s.sets)->composing(), "KEY=VALUE: change any platform value, e.g. network.oversubscription=2 (repeatable; keys as in docs/platforms.md)")
      ("nvlink-bandwidth-gbps", po::value(&s.nvlink_bandwidth_gbps), "bandwidth per NVLink per direction, GB/s")
      ("kernel-overhead-us", po::value(&s.kernel_overhead_us), "launch overhead per kernel, microseconds");
  return platform;
}

bool parse_command_options(const std::vector<std::string>& args, const po::options_description& desc,
                           std::ostream& out, po::variables_map& vm) {
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  if (!vm.count("help")) return true;
  out << desc << "\n";
  return false;
}

platforms::PlatformConfig build_platform(const PlatformSettings& s,
                                         std::shared_ptr<const platforms::RoutedTopology>* routed) {
  std::vector<std::string> sets = s.sets;
  if (s.nodes != 0) sets.push_back("nodes=" + std::to_string(s.nodes));
  if (s.gpus != 0) sets.push_back("node.gpus=" + std::to_string(s.gpus));
  if (s.nvlink_bandwidth_gbps != 0)
    sets.push_back("node.nvlink.link.bandwidth_gb_per_s=" + std::to_string(s.nvlink_bandwidth_gbps));
  if (s.kernel_overhead_us != -1) sets.push_back("gpu.kernel_overhead_us=" + std::to_string(s.kernel_overhead_us));
  platforms::PlatformConfig p;
  try {
    p = platforms::load_platform(s.platform, sets);
  } catch (const platforms::PlatformFileError& e) {
    throw InputError(e.what());
  }
  try {
    p.validate();
    auto topology = std::make_shared<const platforms::RoutedTopology>(p);
    if (routed != nullptr) *routed = std::move(topology);
  } catch (const platforms::PlatformError& e) {
    throw InputError((p.source.empty() ? p.name : p.source) + ": " + e.key() + ": " + e.what());
  }
  return p;
}

}  // namespace tessera::app
