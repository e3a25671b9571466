// Which hardware parameter is worth improving (tessera analyze --sensitivity, docs/analytic.md):
// the elasticity d log(iteration time) / d log(parameter) of the analytic model by central
// finite differences, and the iteration time with the parameter doubled. Each parameter is a
// set of platform keys (--set, docs/platforms.md) scaled together.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "platforms/platform_config.h"

namespace tessera::app {

struct HardwareParameter {
  std::string name;               // "peak FLOP/s bf16"
  std::string unit;               // of the first key's value
  std::vector<std::string> keys;  // platform keys scaled together
  std::function<std::vector<double>(const platforms::PlatformConfig&)> values;  // of the keys
};

// Peak FLOP/s per dtype, HBM bandwidth, NVLink bandwidth and latency, NIC bandwidth, network
// latency (cables and NICs), switch latency (NVSwitches and network switches).
const std::vector<HardwareParameter>& hardware_parameters();

// "key=value" settings that scale the parameter's keys by `factor`.
std::vector<std::string> scaled_settings(const HardwareParameter& p, const platforms::PlatformConfig& base,
                                         double factor);

struct Sensitivity {
  const HardwareParameter* parameter = nullptr;
  double value = 0;         // its first key's value on the platform
  double elasticity = 0;    // d log T / d log parameter (0 where the value is 0)
  double time_at_double_s = 0;
};

// The iteration time (seconds) of the platform with extra settings.
using IterationTime = std::function<double(const std::vector<std::string>& settings)>;

// Every parameter's elasticity at relative step `step` (central differences), sorted by its
// magnitude, largest first (ties in the order of hardware_parameters()).
std::vector<Sensitivity> sensitivities(const platforms::PlatformConfig& base, const IterationTime& iteration,
                                       double base_time_s, double step);

// Elasticity from times at (1 - step) and (1 + step) of a parameter.
double elasticity(double time_down, double time_up, double step);

void print_sensitivities(std::ostream& out, const std::vector<Sensitivity>& s, double base_time_s, double step);

}  // namespace tessera::app
