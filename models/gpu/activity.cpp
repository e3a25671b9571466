#include "models/gpu/activity.h"

#include "workloads/program.h"

namespace tessera::models {

const char* to_string(ComputeCause cause) {
  switch (cause) {
    case ComputeCause::Gemm: return "gemm";
    case ComputeCause::Attention: return "attention";
    case ComputeCause::MemoryBound: return "memory_bound";
    case ComputeCause::Framework: return "framework";
  }
  return "?";
}

ComputeCause cause_of_kernel(uint8_t kernel_kind) {
  using workloads::KernelKind;
  switch (static_cast<KernelKind>(kernel_kind)) {
    case KernelKind::Gemm: return ComputeCause::Gemm;
    case KernelKind::AttentionGemm:
    case KernelKind::FlashAttention:
    case KernelKind::Softmax: return ComputeCause::Attention;
    case KernelKind::Optimizer:
    case KernelKind::Framework: return ComputeCause::Framework;
    default: return ComputeCause::MemoryBound;
  }
}

void GpuActivity::change(int compute, int communication, TimeCause cause) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (compute + communication > 0) ledger_.begin(now.to_seconds(), cause);
  else ledger_.end(now.to_seconds(), cause);
  const sc_core::sc_time elapsed = now - last_;
  if (computing_ > 0) {
    compute_ += elapsed;
    if (communicating_ > 0) overlapped_ += elapsed;
  } else if (communicating_ > 0) {
    exposed_ += elapsed;
  } else {
    idle_ += elapsed;
  }
  last_ = now;
  computing_ += compute;
  communicating_ += communication;
}

void GpuActivity::close(sc_core::sc_time end) {
  ledger_.close(end.to_seconds());
  if (end > last_) {
    const sc_core::sc_time elapsed = end - last_;
    if (computing_ > 0) compute_ += elapsed;
    else if (communicating_ > 0) exposed_ += elapsed;
    else idle_ += elapsed;
    last_ = end;
  }
}

}  // namespace tessera::models
