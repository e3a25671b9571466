// Where a rank's iteration goes, by cause (docs/architecture.md, "Time by cause"): at every
// instant exactly one cause is charged, so the causes add up to the iteration time.
//  - compute / optimizer: a kernel runs (optimizer-phase kernels: optimizer);
//  - else communication the GPU waits on, in this order when several are in flight: tensor
//    parallel (TP collectives, the vocabulary-parallel ones included), context and expert
//    parallel (CP all-gathers, MoE all-to-alls), pipeline bubble (a send or receive between
//    stages), data parallel (gradient reductions, ZeRO gathers, embedding and replica sums);
//  - else idle.
// Plain C++: the SystemC GPU and the analytic model keep the same ledger.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/program.h"

namespace tessera::models {

enum class TimeCause : uint8_t {
  Compute,
  TensorParallel,
  ContextExpertParallel,
  PipelineBubble,
  DataParallel,
  Optimizer,
  Idle
};
constexpr int kTimeCauses = 7;
// "compute", "tensor_parallel", "context_expert_parallel", "pipeline_bubble", "data_parallel",
// "optimizer", "idle".
const char* to_string(TimeCause cause);

// A kernel of `phase`: optimizer or compute.
inline TimeCause compute_cause(workloads::ComputePhase phase) {
  return phase == workloads::ComputePhase::Optimizer ? TimeCause::Optimizer : TimeCause::Compute;
}

// The cause op `op` of `rank` is charged to while the GPU waits on it: compute ops by phase;
// sends and receives the pipeline; collectives by their communicator's family (tp and
// embedding_tp; cp and ep; the others, dp, edp, embedding and embedding_replica or a job
// file's own names, data parallel).
TimeCause cause_of_op(const workloads::Job& job, const workloads::Rank& rank, const workloads::Op& op);

// The cause of a collective on a communicator of `family` (its name).
TimeCause communicator_cause(const std::string& family);

struct CauseSpan {
  TimeCause cause = TimeCause::Idle;
  double start_s = 0, end_s = 0;
};

class TimeLedger {
 public:
  void begin(double now, TimeCause cause) { change(now, cause, 1); }
  void end(double now, TimeCause cause) { change(now, cause, -1); }
  // Charges the time up to `end` (the iteration's end).
  void close(double end) { change(end, TimeCause::Idle, 0); }
  const std::array<double, kTimeCauses>& seconds() const { return seconds_; }
  // The cause charged now.
  TimeCause current() const;
  // Spans of one cause each, for the trace; kept only when enabled.
  void enable_spans() { record_ = true; }
  const std::vector<CauseSpan>& spans() const { return spans_; }

 private:
  void change(double now, TimeCause cause, int delta);

  std::array<int, kTimeCauses> active_{};
  std::array<double, kTimeCauses> seconds_{};
  double last_ = 0;
  bool record_ = false;
  std::vector<CauseSpan> spans_;
};

}  // namespace tessera::models
