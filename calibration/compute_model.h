// The compute model tessera times kernels with (docs/compute-model.md): a GPU type's
// parameters from calibration/data/compute/<GPU>.yaml, each cited there.
//   - GEMMs and the attention core's batched GEMMs: GemmModel (tiles, waves, L2 and HBM).
//   - flash attention: its FLOPs at the measured flash-attention rate.
//   - memory-bound kernels: their bytes at the measured HBM (STREAM) bandwidth times the
//     achieved fraction measured for that kind of kernel, plus a per-kernel cost for each
//     kernel the op launches (unfused implementations launch several).
//   - the host: an op of N kernels takes at least N host launches (launch-bound short kernels).
//   - a measured kernel table (tessera calibrate) overrides all of it for matching kernels.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "calibration/gemm_model.h"
#include "calibration/kernel_table.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel_timer.h"
#include "workloads/program.h"

namespace tessera::calibration {

struct MemoryKernelParameters {
  double stream_bandwidth = 0;  // bytes/s, STREAM triad
  double launch_s = 0;          // per kernel
  std::array<double, workloads::kKernelKinds> efficiency{};  // of STREAM, by KernelKind
};

struct ComputeParameters {
  std::string gpu;   // the GPU type the file describes
  std::string file;  // where it came from
  GemmParameters gemm;
  MemoryKernelParameters memory;
  std::array<double, 5> flash_attention_flops{};  // FLOP/s by DType (0: not measured)
};

// The directory of the shipped compute-model files (calibration/data/compute).
std::string compute_data_directory();
// Reads the compute-model file of a GPU type (a name with a file in the data directory, or a
// path). Throws workloads::InputError naming the file, line and key, or the GPU types known.
ComputeParameters load_compute_parameters(const std::string& gpu_or_path);
// Whether the data directory has a file for this GPU type.
bool has_compute_parameters(const std::string& gpu);

class ComputeModel : public models::KernelTimer {
 public:
  // host_launch_s: the framework's host time per kernel launch. table: measured kernels (may be
  // null); it must name the same GPU type.
  ComputeModel(const models::GpuSpec& gpu, ComputeParameters parameters, double host_launch_s,
               std::shared_ptr<const KernelTable> table = nullptr);

  models::KernelTime kernel_time(const protocol::ComputeEvent& kernel) const override;
  // The device time of one op, without the host (for reports and tests).
  double device_seconds(const protocol::ComputeEvent& kernel) const;
  const GemmModel& gemm() const { return gemm_; }
  double peak_flops(workloads::DType dtype) const;
  const ComputeParameters& parameters() const { return p_; }

 private:
  double measured_or_modelled(const protocol::ComputeEvent& kernel) const;
  double memory_bound_seconds(const protocol::ComputeEvent& kernel) const;
  double flash_attention_seconds(const protocol::ComputeEvent& kernel) const;

  models::GpuSpec gpu_;
  ComputeParameters p_;
  GemmModel gemm_;
  double host_launch_s_;
  std::shared_ptr<const KernelTable> table_;
};

}  // namespace tessera::calibration
