// The platform options every command shares (--platform, --nodes, --gpus, --set ...), and the
// platform they describe, checked: a bad value is an InputError naming the option or key.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "platforms/platform_config.h"
#include "platforms/routing.h"
#include "sc_main/input_error.h"

namespace tessera::app {

// An option that is not given leaves the platform's value; one that is given is checked where
// the platform file's value would be, and an error names the option.
struct PlatformSettings {
  std::string platform = "dgx-h100";
  std::optional<int64_t> nodes, gpus;
  std::optional<double> nvlink_bandwidth_gbps, kernel_overhead_us;
  std::vector<std::string> sets;  // "key=value" (the platform file's dotted keys)
  // --rtl-arbiter WHERE[:BLOCK]: nvswitch, network or all; BLOCK as in the platform file's
  // `arbiter: rtl:BLOCK` (docs/cosim.md).
  std::vector<std::string> rtl_arbiters;
};

boost::program_options::options_description platform_options(PlatformSettings& s);

// The message of an option error. Boost.ProgramOptions (1.74) fills its message template in a
// loop that never ends when a value holds its own placeholder (`--nodes %value%`); this fills it
// with each '%' of the values stood in for first, so any value gives its message.
std::string option_error_message(boost::program_options::error& e);

// Stores a command line's options in `vm`; a positional argument (one no option takes) or an
// unknown option is an InputError naming it.
void store_command_line(const std::vector<std::string>& args,
                        const boost::program_options::options_description& desc,
                        boost::program_options::variables_map& vm);

// Parses a command's options (errors become InputError). Returns false after printing the
// options for --help, when the command has nothing more to do.
bool parse_command_options(const std::vector<std::string>& args,
                           const boost::program_options::options_description& desc, std::ostream& out,
                           boost::program_options::variables_map& vm);

// An error a platform's values cause once loaded (validation, topology, or what a run's options
// ask of it): "FILE: KEY: message".
InputError platform_value_error(const platforms::PlatformConfig& p, const platforms::PlatformError& e);

// The platform with the command line's changes, validated, its topology generated and routed
// once (so an unbuildable or unroutable platform fails here, before any simulation); the
// graph and routes go to `routed` when given, for the builder to reuse.
platforms::PlatformConfig build_platform(const PlatformSettings& s,
                                         std::shared_ptr<const platforms::RoutedTopology>* routed = nullptr);

}  // namespace tessera::app
