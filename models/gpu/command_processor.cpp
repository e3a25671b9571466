#include "models/gpu/command_processor.h"

#include <algorithm>

#include "models/collectives/tuner.h"
#include "tlm/extensions.h"

namespace tessera::models {

using sc_core::sc_time;
using workloads::OpKind;

void fill_compute_event(protocol::ComputeEvent& e, const workloads::Job& job, int rank,
                        uint32_t index, const workloads::Op& op) {
  e.name = &job.names[op.name];
  e.rank = static_cast<uint32_t>(rank);
  e.op = index;
  e.stream = op.stream;
  e.phase = static_cast<uint8_t>(op.phase);
  e.dtype = static_cast<uint8_t>(op.dtype);
  e.flops = op.flops;
  e.bytes = op.bytes;
  e.gemm_m = op.gemm.m;
  e.gemm_n = op.gemm.n;
  e.gemm_k = op.gemm.k;
  e.gemm_batch = op.gemm.batch;
  e.kind = static_cast<uint8_t>(op.kernel);
  e.kernels = op.kernels;
  e.elements = op.elements;
  e.memory_copy = op.kind == OpKind::MemCopy;
}

void fill_communication_event(protocol::CollectiveEvent& e, const workloads::Job& job, const workloads::Rank& rank,
                              uint32_t index, const workloads::Op& op, uint32_t call) {
  e.name = &job.names[op.name];
  e.rank = static_cast<uint32_t>(rank.rank);
  e.op = index;
  e.bytes = op.message_bytes;
  e.tag = op.tag;
  e.algorithm = protocol::CollectiveAlgorithm::Automatic;
  e.protocol = protocol::CollectiveProtocol::Automatic;
  e.splits = nullptr;
  e.communicator = -1;
  e.peer = -1;
  e.issued_at = sc_core::sc_time_stamp();
  static_assert(kNoCall == protocol::CollectiveEvent::kUnnumbered, "an op without a call number is unnumbered");
  e.call = kNoCall;
  if (op.kind == OpKind::Collective) {
    e.kind = collective_op(op.collective);
    e.communicator = rank.communicators[op.slot];
    e.call = call;
    op_algorithm_choice(job, op, e.algorithm, e.protocol);  // (checked before the run: never throws here)
    if (op.collective == workloads::CollectiveKind::AllToAllV) e.splits = job.splits[op.splits - 1].data();
  } else {
    e.kind = op.kind == OpKind::Send ? protocol::CollectiveOp::Send : protocol::CollectiveOp::Recv;
    e.peer = rank.peers[op.slot];
  }
}

CommandProcessor::CommandProcessor(sc_core::sc_module_name name, protocol::PayloadPool& pool,
                                   GpuActivity& activity)
    : sc_module(name), to_compute("to_compute"), to_copy("to_copy"),
      to_collectives("to_collectives"), pool_(pool), activity_(activity) {
  to_compute.register_nb_transport_bw(this, &CommandProcessor::nb_transport_bw);
  to_copy.register_nb_transport_bw(this, &CommandProcessor::nb_transport_bw);
  to_collectives.register_nb_transport_bw(this, &CommandProcessor::nb_transport_bw);
  // Runs once at time zero and issues the ops that wait for nothing.
  protocol::spawn_method("start", nullptr, [this] { begin(); });
}

void CommandProcessor::load(const workloads::Job& job, const workloads::Rank& rank,
                            std::shared_ptr<const ProgramGraph> graph,
                            ProgressMonitor* monitor, uint64_t iterations) {
  job_ = &job;
  rank_ = &rank;
  graph_ = std::move(graph);
  monitor_ = monitor;
  total_ = graph_->waits.size();
  iterations_ = iterations;
  if (leader_ == nullptr) waits_ = graph_->waits;  // a follower keeps no state per op
  calls_ = &rank_calls(rank, *graph_, own_calls_);
}

void CommandProcessor::begin() {
  if (rank_ == nullptr || leader_ != nullptr) return;  // no program loaded, or a follower
  for (uint32_t op = 0; op < total_; ++op)
    if (waits_[op] == 0) issue(op);
}

void CommandProcessor::start_iteration() {
  ++iteration_;
  completed_ = 0;
  waits_ = graph_->waits;
  begin();
}

void CommandProcessor::issue(uint32_t index) {
  const workloads::Op& op = rank_->program->ops[index];
  waits_[index] = kIssued;
  tlm::tlm_generic_payload* gp = pool_.acquire();
  gp->set_address(index);  // the op this transaction carries, for its completion
  protocol::InitiatorSocket<CommandProcessor>* socket = &to_compute;
  if (op.kind == OpKind::Compute || op.kind == OpKind::MemCopy) {
    protocol::ComputeEvent& e = protocol::compute_event(*gp);
    fill_compute_event(e, *job_, rank_->rank, index, op);
    if (e.memory_copy) socket = &to_copy;
  } else {
    fill_communication_event(protocol::collective_event(*gp), *job_, *rank_, index, op, (*calls_)[index]);
    socket = &to_collectives;
    activity_.communication_begin(cause_of_op(*job_, *rank_, op));
  }
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_time delay = sc_core::SC_ZERO_TIME;
  (*socket)->nb_transport_fw(*gp, phase, delay);  // engines accept at once (END_REQ)
  if (socket != &to_collectives || followers_.empty()) return;
  uint32_t replaying = 0;
  for (Follower& f : followers_)
    if (f.gpu != nullptr && replay_table(f)[index]) {
      f.gpu->replay(index);
      ++replaying;
    }
  if (replaying > 0) skews_[index].replaying = replaying;
}

tlm::tlm_sync_enum CommandProcessor::nb_transport_bw(tlm::tlm_generic_payload& gp,
                                                     tlm::tlm_phase& phase, sc_time&) {
  if (phase != tlm::BEGIN_RESP) return tlm::TLM_ACCEPTED;  // END_REQ
  const uint32_t index = static_cast<uint32_t>(gp.get_address());
  if (leader_ != nullptr) {  // a follower's replayed op
    gp.release();
    --replaying_;
    matched(index, false);
    return tlm::TLM_COMPLETED;
  }
  const OpKind kind = rank_->program->ops[index].kind;
  if (kind != OpKind::Compute && kind != OpKind::MemCopy) {
    call_closed(index, protocol::collective_event(gp).issued_at);
    for (Follower& f : followers_)
      if (f.gpu != nullptr && replay_table(f)[index]) f.gpu->matched(index, true);
    made_calls_done(index, protocol::collective_event(gp).issued_at);
  }
  gp.release();
  complete(index);
  return tlm::TLM_COMPLETED;
}

void CommandProcessor::made_calls_done(uint32_t index, sc_time issued) {
  if (made_for_.size() == 0) return;
  const size_t at = made_for_.position(index);
  if (at == made_for_.kNone) return;
  const std::vector<CommandProcessor*> parted = std::move(made_for_.at(at));
  made_for_.erase_at(at);
  for (CommandProcessor* p : parted) p->made_call_done(index, issued);
}

void CommandProcessor::call_closed(uint32_t index, sc_time issued) {
  activity_.communication_end(cause_of_op(*job_, *rank_, rank_->program->ops[index]));
  activity_.span(index, issued, sc_core::sc_time_stamp());
}

void CommandProcessor::complete(uint32_t index) {
  waits_[index] = kComplete;
  ++completed_;
  const uint32_t* begin = graph_->successors.data() + graph_->successor_begin[index];
  const uint32_t* end = graph_->successors.data() + graph_->successor_begin[index + 1];
  for (const uint32_t* s = begin; s != end; ++s)  // (a call issued ahead of it: a parted GPU's replay)
    if (waits_[*s] < kIssued && --waits_[*s] == 0) issue(*s);
  if (monitor_ != nullptr) monitor_->op_completed();
  if (completed_ != total_) return;
  finish_ = sc_core::sc_time_stamp();
  if (iteration_ + 1 < iterations_) start_iteration();
}

std::vector<uint32_t> CommandProcessor::in_flight() const {
  std::vector<uint32_t> ops;
  for (uint32_t i = 0; i < waits_.size(); ++i)
    if (waits_[i] == kIssued) ops.push_back(i);
  return ops;
}

std::vector<int64_t> CommandProcessor::first_blocked_per_stream() const {
  std::vector<int64_t> first(job_->stream_names.size(), -1);
  for (uint32_t i = 0; i < waits_.size(); ++i) {
    const uint16_t s = rank_->program->ops[i].stream;
    if (waits_[i] != kIssued && waits_[i] != kComplete && first[s] < 0) first[s] = i;
  }
  return first;
}

}  // namespace tessera::models
