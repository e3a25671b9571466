#include "calibration/compute_model.h"

#include <algorithm>
#include <filesystem>

#include "workloads/errors.h"

namespace tessera::calibration {

using workloads::DType;
using workloads::KernelKind;

ComputeModel::ComputeModel(const models::GpuSpec& gpu, ComputeParameters parameters,
                           double host_launch_s, std::shared_ptr<const KernelTable> table)
    : gpu_(gpu), p_(std::move(parameters)),
      gemm_(p_.gemm, gpu.sm_count, p_.memory.stream_bandwidth), host_launch_s_(host_launch_s),
      table_(std::move(table)) {
  if (table_ && !table_->empty() && table_->gpu() != gpu_.name)
    throw workloads::InputError("the calibration names GPU " + table_->gpu() +
                                " but the platform's GPU is " + gpu_.name);
}

double ComputeModel::peak_flops(DType dtype) const {
  return gpu_.peak_tflops[static_cast<size_t>(dtype)] * 1e12;
}

models::KernelTime ComputeModel::kernel_time(const protocol::ComputeEvent& k) const {
  models::KernelTime t;
  t.device_s = device_seconds(k);
  t.host_s = std::max(0.0, std::max<int>(1, k.kernels) * host_launch_s_ - t.device_s);
  return t;
}

double ComputeModel::device_seconds(const protocol::ComputeEvent& k) const {
  if (table_) {
    KernelKey key;
    key.kind = static_cast<KernelKind>(k.kind);
    key.dtype = static_cast<DType>(k.dtype);
    key.batch = k.gemm_batch;
    key.m = k.gemm_m;
    key.n = k.gemm_n;
    key.k = k.gemm_k;
    key.elements = 0;
    if (key.kind != KernelKind::Gemm && key.kind != KernelKind::AttentionGemm)
      key.elements = k.elements;
    if (const auto measured = table_->seconds(key)) return *measured;
  }
  return measured_or_modelled(k);
}

double ComputeModel::measured_or_modelled(const protocol::ComputeEvent& k) const {
  const auto kind = static_cast<KernelKind>(k.kind);
  const DType dtype = static_cast<DType>(k.dtype);
  const double eb = workloads::dtype_bytes(dtype);
  const bool shaped = k.gemm_m > 0 && k.gemm_n > 0 && k.gemm_k > 0;
  if ((kind == KernelKind::Gemm || kind == KernelKind::AttentionGemm) && shaped)
    return gemm_.seconds(std::max<int64_t>(1, k.gemm_batch), k.gemm_m, k.gemm_n, k.gemm_k,
                         dtype == DType::FP8 ? 1.0 : eb, peak_flops(dtype));
  if (kind == KernelKind::FlashAttention) return flash_attention_seconds(k);
  if (kind == KernelKind::Gemm || kind == KernelKind::AttentionGemm) {
    // A matmul of unknown shape (a custom op): the main-loop rate against the HBM roofline.
    const double compute = k.flops / (peak_flops(dtype) * p_.gemm.mainloop_efficiency);
    return std::max(compute, k.bytes / p_.memory.stream_bandwidth) + p_.gemm.launch_s;
  }
  return memory_bound_seconds(k);
}

double ComputeModel::flash_attention_seconds(const protocol::ComputeEvent& k) const {
  double rate = p_.flash_attention_flops[k.dtype];
  if (rate <= 0) rate = peak_flops(static_cast<DType>(k.dtype)) * p_.gemm.mainloop_efficiency;
  return std::max(k.flops / rate, k.bytes / p_.memory.stream_bandwidth) + p_.gemm.launch_s;
}

double ComputeModel::memory_bound_seconds(const protocol::ComputeEvent& k) const {
  const double efficiency = p_.memory.efficiency[k.kind];
  const double moved = k.bytes / (p_.memory.stream_bandwidth * efficiency);
  // Element-wise FLOPs run on the CUDA cores (the fp32 rate); they rarely bound.
  const double compute = k.flops / peak_flops(DType::FP32);
  return std::max(moved, compute) + std::max<int>(1, k.kernels) * p_.memory.launch_s;
}

}  // namespace tessera::calibration
