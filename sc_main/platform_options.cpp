#include "sc_main/platform_options.h"

#include <map>
#include <string>

#include "platforms/platform_file.h"
#include "sc_main/input_error.h"
#include "workloads/limits.h"

namespace po = boost::program_options;

namespace tessera::app {

namespace {

// The options that stand for a platform key, for errors to name the option the user typed.
struct KeyOption {
  const char* option;
  const char* key;
};
constexpr KeyOption kKeyOptions[] = {{"--nodes", "nodes"},
                                     {"--gpus", "node.gpus"},
                                     {"--nvlink-bandwidth-gbps", "node.nvlink.link.bandwidth_gb_per_s"},
                                     {"--kernel-overhead-us", "gpu.kernel_overhead_us"}};

template <typename T>
po::typed_value<T>* optional_value(std::optional<T>& target) {
  return po::value<T>()->notifier([&target](const T& v) { target = v; });
}

// The option settings as platform keys, in the order of kKeyOptions (values exact, not rounded).
std::vector<std::pair<const KeyOption*, std::string>> option_settings(const PlatformSettings& s) {
  const std::optional<double> values[] = {
      s.nodes ? std::optional<double>(double(*s.nodes)) : std::nullopt,
      s.gpus ? std::optional<double>(double(*s.gpus)) : std::nullopt, s.nvlink_bandwidth_gbps,
      s.kernel_overhead_us};
  std::vector<std::pair<const KeyOption*, std::string>> out;
  for (size_t i = 0; i < std::size(kKeyOptions); ++i)
    if (values[i]) out.emplace_back(&kKeyOptions[i], limits::shown(*values[i]));
  return out;
}

// A platform error about a key an option set names the option and its value, not "--set".
InputError platform_input_error(const platforms::PlatformFileError& e, const PlatformSettings& s) {
  if (e.file() == "--set")
    for (const auto& setting : option_settings(s))
      if (e.key() == setting.first->key) return InputError(std::string(setting.first->option) + ": " + e.message());
  if (e.file() == "--set" && !s.rtl_arbiters.empty() &&
      (e.key() == "node.nvswitch.arbiter" || e.key() == "network.switch.arbiter")) {
    bool set_apart = false;
    for (const std::string& set : s.sets) set_apart = set_apart || set.rfind(e.key(), 0) == 0;
    if (!set_apart) return InputError("--rtl-arbiter: " + e.key() + ": " + e.message());
  }
  return InputError(e.what());
}

}  // namespace

po::options_description platform_options(PlatformSettings& s) {
  po::options_description platform("platform");
  platform.add_options()
      ("platform", po::value(&s.platform)->default_value("dgx-h100"), "a shipped platform (see 'tessera platforms') or a platform YAML file")
      ("nodes", optional_value(s.nodes), "number of nodes (default: the platform's)")
      ("gpus", optional_value(s.gpus), "GPUs per node (default: the platform's)")
      ("set", po::value(&s.sets)->composing(), "KEY=VALUE: change any platform value, e.g. network.oversubscription=2 (repeatable; keys as in docs/platforms.md)")
      ("rtl-arbiter", po::value(&s.rtl_arbiters)->composing(), "WHERE[:BLOCK]: the output ports of the NVSwitches (nvswitch), the network switches (network) or both (all) arbitrate with an RTL block: rr_arbiter, or BLOCK (a block name or a Verilog file; docs/cosim.md); repeatable")
      ("nvlink-bandwidth-gbps", optional_value(s.nvlink_bandwidth_gbps), "bandwidth per NVLink per direction, GB/s")
      ("kernel-overhead-us", optional_value(s.kernel_overhead_us), "launch overhead per kernel, microseconds");
  return platform;
}

namespace {

// The substitutions of an option error (placeholder -> value), which Boost keeps protected: a
// pointer to the member, named through a derived class, reaches them in any such error.
struct SubstitutionAccess : po::error_with_option_name {
  using Map = std::map<std::string, std::string>;
  static Map& of(po::error_with_option_name& e) { return e.*(&SubstitutionAccess::m_substitutions); }
};

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

std::string option_error_message(po::error& e) {
  auto* named = dynamic_cast<po::error_with_option_name*>(&e);
  if (named == nullptr) return e.what();
  const std::string stand_in = "\x01";
  for (auto& [placeholder, value] : SubstitutionAccess::of(*named)) replace_all(value, "%", stand_in);
  std::string message = named->what();
  replace_all(message, stand_in, "%");
  return message;
}

void store_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                        po::variables_map& vm) {
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(desc).run();
    for (const po::option& o : parsed.options)
      if (o.position_key >= 0 && !o.value.empty())
        throw InputError("unexpected argument '" + o.value.front() +
                         "' (options start with --, and each value follows its option)");
    po::store(parsed, vm);
  } catch (po::error& e) {
    throw InputError(option_error_message(e));
  }
}

bool parse_command_options(const std::vector<std::string>& args, const po::options_description& desc,
                           std::ostream& out, po::variables_map& vm) {
  store_command_line(args, desc, vm);
  try {
    po::notify(vm);
  } catch (po::error& e) {
    throw InputError(option_error_message(e));
  }
  if (!vm.count("help")) return true;
  out << desc << "\n";
  return false;
}

// --rtl-arbiter WHERE[:BLOCK] as platform settings.
std::vector<std::string> rtl_arbiter_settings(const std::string& option) {
  const size_t colon = option.find(':');
  const std::string where = option.substr(0, colon);
  const std::string value = colon == std::string::npos ? "rtl" : "rtl:" + option.substr(colon + 1);
  if (colon != std::string::npos && option.size() == colon + 1)
    throw InputError("--rtl-arbiter " + option + ": a block name or a Verilog file after ':'");
  if (where == "nvswitch") return {"node.nvswitch.arbiter=" + value};
  if (where == "network") return {"network.switch.arbiter=" + value};
  if (where == "all") return {"node.nvswitch.arbiter=" + value, "network.switch.arbiter=" + value};
  throw InputError("--rtl-arbiter " + option + ": expected nvswitch, network or all, optionally with :BLOCK");
}

platforms::PlatformConfig build_platform(const PlatformSettings& s,
                                         std::shared_ptr<const platforms::RoutedTopology>* routed) {
  std::vector<std::string> sets = s.sets;
  for (const std::string& option : s.rtl_arbiters) {
    std::vector<std::string> more = rtl_arbiter_settings(option);
    // `all` names only the kinds of switch the platform has.
    if (more.size() == 2) try {
        const platforms::PlatformConfig probe = platforms::load_platform(s.platform, s.sets);
        if (probe.network.topology == platforms::Topology::None) more.pop_back();
        if (probe.node.nvlink.switches == 0) more.erase(more.begin());
      } catch (const platforms::PlatformFileError&) {
        // the load below reports it
      }
    sets.insert(sets.end(), more.begin(), more.end());
  }
  for (const auto& [option, value] : option_settings(s)) sets.push_back(std::string(option->key) + "=" + value);
  platforms::PlatformConfig p;
  try {
    p = platforms::load_platform(s.platform, sets);
  } catch (const platforms::PlatformFileError& e) {
    throw platform_input_error(e, s);
  }
  try {
    p.validate();
    auto topology = std::make_shared<const platforms::RoutedTopology>(p);
    if (routed != nullptr) *routed = std::move(topology);
  } catch (const platforms::PlatformError& e) {
    throw platform_value_error(p, e);
  }
  return p;
}

InputError platform_value_error(const platforms::PlatformConfig& p, const platforms::PlatformError& e) {
  return InputError((p.source.empty() ? p.name : p.source) + ": " + e.key() + ": " + e.what());
}

}  // namespace tessera::app
