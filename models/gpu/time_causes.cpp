#include "models/gpu/time_causes.h"

namespace tessera::models {

const char* to_string(TimeCause cause) {
  switch (cause) {
    case TimeCause::Compute: return "compute";
    case TimeCause::TensorParallel: return "tensor_parallel";
    case TimeCause::ContextExpertParallel: return "context_expert_parallel";
    case TimeCause::PipelineBubble: return "pipeline_bubble";
    case TimeCause::DataParallel: return "data_parallel";
    case TimeCause::Optimizer: return "optimizer";
    case TimeCause::Idle: return "idle";
  }
  return "?";
}

TimeCause cause_of_op(const workloads::Job& job, const workloads::Rank& rank, const workloads::Op& op) {
  using workloads::OpKind;
  switch (op.kind) {
    case OpKind::Compute:
    case OpKind::MemCopy:
      return compute_cause(op.phase);
    case OpKind::Send:
    case OpKind::Recv: return TimeCause::PipelineBubble;
    case OpKind::Collective: break;
  }
  return communicator_cause(job.communicators[size_t(rank.communicators[size_t(op.slot)])].name);
}

TimeCause communicator_cause(const std::string& family) {
  if (family == "tp" || family == "embedding_tp") return TimeCause::TensorParallel;
  if (family == "cp" || family == "ep") return TimeCause::ContextExpertParallel;
  return TimeCause::DataParallel;
}

TimeCause TimeLedger::current() const {
  for (TimeCause c : {TimeCause::Optimizer, TimeCause::Compute, TimeCause::TensorParallel,
                      TimeCause::ContextExpertParallel, TimeCause::PipelineBubble, TimeCause::DataParallel})
    if (active_[size_t(c)] > 0) return c;
  return TimeCause::Idle;
}

void TimeLedger::change(double now, TimeCause cause, int delta) {
  const TimeCause charged = current();
  if (now > last_) {
    seconds_[size_t(charged)] += now - last_;
    if (record_) {
      if (!spans_.empty() && spans_.back().cause == charged && spans_.back().end_s == last_) spans_.back().end_s = now;
      else spans_.push_back(CauseSpan{charged, last_, now});
    }
    last_ = now;
  }
  active_[size_t(cause)] += delta;
}

}  // namespace tessera::models
