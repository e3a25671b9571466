#include "sc_main/compute_options.h"

#include "calibration/compute_model.h"
#include "calibration/kernel_table.h"
#include "platforms/platform_file.h"
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

namespace {

// The compute-model file holds measurements of the GPU type as shipped; a platform that
// changes its HBM bandwidth or a peak (--set gpu.hbm_bandwidth_gbps=..., as tessera analyze
// --sensitivity does) moves the measured STREAM bandwidth and flash-attention rates with them.
calibration::ComputeParameters scaled_to(const models::GpuSpec& gpu, calibration::ComputeParameters p) {
  models::GpuSpec nominal;
  try {
    nominal = platforms::load_gpu(gpu.name);
  } catch (const std::exception&) {
    return p;  // a GPU type of its own file: its values are the measured ones
  }
  if (nominal.hbm_bandwidth_gbps > 0) p.memory.stream_bandwidth *= gpu.hbm_bandwidth_gbps / nominal.hbm_bandwidth_gbps;
  for (size_t d = 0; d < p.flash_attention_flops.size(); ++d)
    if (nominal.peak_tflops[d] > 0) p.flash_attention_flops[d] *= gpu.peak_tflops[d] / nominal.peak_tflops[d];
  return p;
}

}  // namespace

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
      platform.gpu, scaled_to(platform.gpu, calibration::load_compute_parameters(gpu)),
      framework.host_launch_us * 1e-6, table);
}

}  // namespace tessera::app
