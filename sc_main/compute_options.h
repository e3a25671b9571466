// The compute side of a run: which framework produced the workload (its fusions and overheads),
// which compute model times the kernels and which measured kernel table overrides it.
#pragma once

#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "models/gpu/kernel_timer.h"
#include "platforms/platform_config.h"
#include "workloads/framework.h"

namespace tessera::app {

struct ComputeSettings {
  std::string framework = "megatron-core";
  std::string compute_model = "calibrated";
  std::string calibration;  // a `tessera calibrate` file
};

boost::program_options::options_description compute_options(ComputeSettings& settings);

// The framework named by --framework (InputError naming the option otherwise).
workloads::Framework load_framework_option(const ComputeSettings& settings);

// The kernel timer of a run: the calibrated compute model of the platform's GPU type (with the
// measured table of --calibration), or null for the roofline (--compute-model roofline, or a
// GPU type without a compute-model file; `note` then says why).
std::shared_ptr<const models::KernelTimer> make_kernel_timer(const ComputeSettings& settings,
                                                             const platforms::PlatformConfig& platform,
                                                             const workloads::Framework& framework,
                                                             std::string* note = nullptr);

}  // namespace tessera::app
