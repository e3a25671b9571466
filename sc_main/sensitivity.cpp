#include "sc_main/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace tessera::app {

using platforms::PlatformConfig;

const std::vector<HardwareParameter>& hardware_parameters() {
  static const std::vector<HardwareParameter> parameters = [] {
    std::vector<HardwareParameter> p;
    const char* dtypes[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
    for (size_t d = 0; d < 5; ++d)
      p.push_back({std::string("peak FLOP/s ") + dtypes[d], "TFLOP/s", {std::string("gpu.peak_tflops.") + dtypes[d]},
                   [d](const PlatformConfig& c) { return std::vector<double>{c.gpu.peak_tflops[d]}; }});
    p.push_back({"HBM bandwidth", "GB/s", {"gpu.hbm_bandwidth_gbps"},
                 [](const PlatformConfig& c) { return std::vector<double>{c.gpu.hbm_bandwidth_gbps}; }});
    p.push_back({"NVLink bandwidth", "GB/s per link", {"node.nvlink.link.bandwidth_gb_per_s"},
                 [](const PlatformConfig& c) { return std::vector<double>{c.node.nvlink.link.bandwidth_gb_per_s}; }});
    p.push_back({"NVLink latency", "ns", {"node.nvlink.link.latency_ns"},
                 [](const PlatformConfig& c) { return std::vector<double>{c.node.nvlink.link.latency_ns}; }});
    p.push_back({"NIC bandwidth", "Gbit/s", {"node.nics.line_rate_gbit_per_s"},
                 [](const PlatformConfig& c) { return std::vector<double>{c.node.nics.line_rate_gbit_per_s}; }});
    p.push_back({"network latency", "ns (cable)", {"network.link.latency_ns", "node.nics.latency_ns"},
                 [](const PlatformConfig& c) { return std::vector<double>{c.network.link.latency_ns, c.node.nics.latency_ns}; }});
    p.push_back({"switch latency", "ns (NVSwitch)", {"node.nvlink.switch_latency_ns", "network.switch_latency_ns"},
                 [](const PlatformConfig& c) {
                   return std::vector<double>{c.node.nvlink.switch_latency_ns, c.network.switch_latency_ns};
                 }});
    return p;
  }();
  return parameters;
}

std::vector<std::string> scaled_settings(const HardwareParameter& p, const PlatformConfig& base, double factor) {
  const std::vector<double> values = p.values(base);
  std::vector<std::string> out;
  for (size_t k = 0; k < p.keys.size(); ++k) {
    std::ostringstream s;
    s.precision(17);
    s << p.keys[k] << "=" << values[k] * factor;
    out.push_back(s.str());
  }
  return out;
}

double elasticity(double time_down, double time_up, double step) {
  return (std::log(time_up) - std::log(time_down)) / (std::log1p(step) - std::log1p(-step));
}

std::vector<Sensitivity> sensitivities(const PlatformConfig& base, const IterationTime& iteration,
                                       double base_time_s, double step) {
  std::vector<Sensitivity> out;
  for (const HardwareParameter& p : hardware_parameters()) {
    Sensitivity s;
    s.parameter = &p;
    const std::vector<double> values = p.values(base);
    s.value = values.front();
    s.time_at_double_s = base_time_s;
    if (std::any_of(values.begin(), values.end(), [](double v) { return v > 0; })) {
      s.elasticity = elasticity(iteration(scaled_settings(p, base, 1 - step)),
                                iteration(scaled_settings(p, base, 1 + step)), step);
      s.time_at_double_s = iteration(scaled_settings(p, base, 2.0));
    }
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const Sensitivity& a, const Sensitivity& b) {
    return std::fabs(a.elasticity) > std::fabs(b.elasticity);
  });
  return out;
}

void print_sensitivities(std::ostream& out, const std::vector<Sensitivity>& s, double base_time_s, double step) {
  char line[200];
  std::snprintf(line, sizeof line, "  sensitivity: d log(iteration time) / d log(parameter), central differences at +-%g%%\n",
                step * 100);
  out << line;
  out << "  parameter             value                   elasticity   iteration time at 2x\n";
  for (const Sensitivity& x : s) {
    const std::string value = [&] {
      char v[64];
      std::snprintf(v, sizeof v, "%g %s", x.value, x.parameter->unit.c_str());
      return std::string(v);
    }();
    std::snprintf(line, sizeof line, "  %-20s  %-22s  %+10.4f   %12.3f ms (%+.1f%%)\n", x.parameter->name.c_str(),
                  value.c_str(), x.elasticity, x.time_at_double_s * 1e3,
                  100.0 * (x.time_at_double_s / base_time_s - 1));
    out << line;
  }
}

}  // namespace tessera::app
