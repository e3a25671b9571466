#include "sc_main/compute_options.h"

#include "calibration/compute_model.h"
#include "calibration/kernel_table.h"
#include "sc_main/input_error.h"
#include "workloads/errors.h"

namespace po = boost::program_options;

namespace tessera::app {

po::options_description compute_options(ComputeSettings& s) {
  po::options_description compute("compute model");
  compute.add_options()
      ("framework", po::value(&s.framework)->default_value("megatron-core"),
       "the training software: megatron-core, megatron-2021, pytorch-eager or a YAML file (fused kernels, per-iteration work, host launch time, defaults of --attention and --overlap-grad-reduce); docs/compute-model.md")
      ("compute-model", po::value(&s.compute_model)->default_value("calibrated"),
       "calibrated (GEMMs by shape, memory-bound kernels by kind; calibration/data/compute) or roofline (one efficiency for every kernel)")
      ("calibration", po::value(&s.calibration),
       "measured kernel times (a 'tessera calibrate' file) that replace the model's for matching kernels");
  return compute;
}

workloads::Framework load_framework_option(const ComputeSettings& s) {
  if (s.framework.empty()) throw InputError("--framework: empty (megatron-core, megatron-2021, pytorch-eager or a YAML file)");
  return workloads::load_framework(s.framework);
}

std::shared_ptr<const models::KernelTimer> make_kernel_timer(const ComputeSettings& s,
                                                             const platforms::PlatformConfig& platform,
                                                             const workloads::Framework& framework,
                                                             std::string* note) {
  if (s.compute_model != "calibrated" && s.compute_model != "roofline")
    throw InputError("--compute-model: unknown model '" + s.compute_model + "' (calibrated or roofline)");
  if (s.compute_model == "roofline") {
    if (!s.calibration.empty()) throw InputError("--calibration needs --compute-model calibrated");
    return nullptr;
  }
  const std::string& gpu = platform.gpu.name;
  if (!calibration::has_compute_parameters(gpu)) {
    if (!s.calibration.empty())
      throw InputError("--calibration: no compute model for GPU " + gpu + " to calibrate");
    if (note) *note = "no compute model for " + gpu + " (calibration/data/compute): roofline";
    return nullptr;
  }
  std::shared_ptr<const calibration::KernelTable> table;
  if (!s.calibration.empty())
    table = std::make_shared<const calibration::KernelTable>(calibration::KernelTable::load(s.calibration));
  return std::make_shared<const calibration::ComputeModel>(
      platform.gpu, calibration::load_compute_parameters(gpu), framework.host_launch_us * 1e-6, table);
}

}  // namespace tessera::app
