// Where a GPU's time goes: compute (a kernel runs), exposed communication (communication is in
// flight and no kernel runs) and idle (neither). Updated on every state change, never sampled.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <systemc>

#include "models/gpu/time_causes.h"

namespace tessera::models {

// What compute time went to, for the report's breakdown (docs/architecture.md): GEMMs, the
// attention core (its batched GEMMs, softmax, flash attention), memory-bound kernels (norms,
// activations, dropout, residual adds, embedding, loss) and framework overhead (optimizer,
// gradient norm and loss-scale kernels, and the host's launch time where it bounds a kernel).
enum class ComputeCause : uint8_t { Gemm, Attention, MemoryBound, Framework };
constexpr int kComputeCauses = 4;
const char* to_string(ComputeCause cause);
// The cause of a workloads::KernelKind (given as its number).
ComputeCause cause_of_kernel(uint8_t kernel_kind);

struct OpSpan {
  uint32_t op = 0;
  sc_core::sc_time start;
  sc_core::sc_time end;
};

class GpuActivity {
 public:
  // A kernel (of `cause`: compute or optimizer) starts or ends.
  void compute_begin(TimeCause cause = TimeCause::Compute) { change(1, 0, cause); }
  void compute_end(TimeCause cause = TimeCause::Compute) { change(-1, 0, cause); }
  // A collective or send/receive of `cause` is issued or completes.
  void communication_begin(TimeCause cause = TimeCause::DataParallel) { change(0, 1, cause); }
  void communication_end(TimeCause cause = TimeCause::DataParallel) { change(0, -1, cause); }
  // The iteration's time by cause (time_causes.h), adding up to the time closed.
  const TimeLedger& causes() const { return ledger_; }

  // A kernel of `kernel_kind` (workloads::KernelKind) ran `device_s`, and waited `host_s` for
  // the host to launch it.
  void kernel_finished(uint8_t kernel_kind, double device_s, double host_s) {
    by_cause_[static_cast<int>(cause_of_kernel(kernel_kind))] += device_s;
    by_cause_[static_cast<int>(ComputeCause::Framework)] += host_s;
  }
  // Seconds of compute per cause (indexed by ComputeCause).
  const std::array<double, kComputeCauses>& compute_by_cause() const { return by_cause_; }

  // Closes the books at `end` (the iteration's end), counting trailing idle time.
  void close(sc_core::sc_time end);

  sc_core::sc_time compute() const { return compute_; }
  sc_core::sc_time exposed_communication() const { return exposed_; }
  sc_core::sc_time overlapped_communication() const { return overlapped_; }
  sc_core::sc_time idle() const { return idle_; }

  // Op spans for the trace; recorded only when enabled.
  void enable_spans() {
    record_spans_ = true;
    ledger_.enable_spans();
  }
  bool spans_enabled() const { return record_spans_; }
  void span(uint32_t op, sc_core::sc_time start, sc_core::sc_time end) {
    if (record_spans_) spans_.push_back(OpSpan{op, start, end});
  }
  const std::vector<OpSpan>& spans() const { return spans_; }

 private:
  void change(int compute, int communication, TimeCause cause);

  int computing_ = 0;
  int communicating_ = 0;
  sc_core::sc_time last_;
  sc_core::sc_time compute_, exposed_, overlapped_, idle_;
  std::array<double, kComputeCauses> by_cause_{};
  bool record_spans_ = false;
  std::vector<OpSpan> spans_;
  TimeLedger ledger_;
};

}  // namespace tessera::models
