// The GPU's command processor: runs its rank's program with CUDA-stream semantics. An op is
// issued when its stream predecessor and its explicit dependencies have completed; compute ops
// go to the compute engine, copies to the copy engine, collectives and send/receive to the
// collective engine, each as an AT transaction whose BEGIN_RESP completes the op.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/gpu/activity.h"
#include "models/gpu/program_graph.h"
#include "tlm/extensions.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"
#include "workloads/program.h"

namespace tessera::models {

// Counts completed ops across all GPUs and lets the simulation report progress.
class ProgressMonitor {
 public:
  virtual ~ProgressMonitor() = default;
  virtual void op_completed() = 0;
};

// The compute event of compute or copy op `index` of `rank`'s program: what the compute engine
// and the compute model (KernelTimer) see of it.
void fill_compute_event(protocol::ComputeEvent& e, const workloads::Job& job, int rank,
                        uint32_t index, const workloads::Op& op);

class CommandProcessor : public sc_core::sc_module {
 public:
  protocol::InitiatorSocket<CommandProcessor> to_compute;
  protocol::InitiatorSocket<CommandProcessor> to_copy;
  protocol::InitiatorSocket<CommandProcessor> to_collectives;

  CommandProcessor(sc_core::sc_module_name name, protocol::PayloadPool& pool,
                   GpuActivity& activity);

  // Loads the rank's program; it starts at time zero and runs `iterations` times, each
  // iteration as soon as the rank's previous one has completed (the state of one iteration is
  // reused, so memory stays flat however many run).
  void load(const workloads::Job& job, const workloads::Rank& rank,
            std::shared_ptr<const ProgramGraph> graph, ProgressMonitor* monitor,
            uint64_t iterations = 1);

  bool finished() const { return iteration_ + 1 >= iterations_ && completed_ == total_; }
  // Ops completed over every iteration.
  uint64_t completed_ops() const { return iteration_ * total_ + completed_; }
  uint64_t total_ops() const { return iterations_ * total_; }
  sc_core::sc_time finish_time() const { return finish_; }
  // Ops issued and not completed, in issue order.
  std::vector<uint32_t> in_flight() const;
  // For each stream, the first op never issued (or -1).
  std::vector<int64_t> first_blocked_per_stream() const;

 private:
  void begin();
  void start_iteration();
  void issue(uint32_t op);
  void complete(uint32_t op);
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);

  protocol::PayloadPool& pool_;
  GpuActivity& activity_;
  const workloads::Job* job_ = nullptr;
  const workloads::Rank* rank_ = nullptr;
  std::shared_ptr<const ProgramGraph> graph_;
  ProgressMonitor* monitor_ = nullptr;
  // Per op: its predecessors not complete, or kIssued, or kComplete. The only state per op of
  // the rank (a large job has millions of ops on each of thousands of GPUs); a communication
  // op's issue time, which its span needs, travels in its transaction.
  static constexpr uint32_t kIssued = UINT32_MAX - 1, kComplete = UINT32_MAX;
  std::vector<uint32_t> waits_;
  // Per op: a collective's call number on its communicator: the program's numbering by slot
  // (ProgramGraph::calls), or the rank's own where two of its slots name one communicator.
  const std::vector<uint32_t>* calls_ = nullptr;
  std::vector<uint32_t> own_calls_;
  uint64_t completed_ = 0;  // in the current iteration
  uint64_t total_ = 0;      // ops of one iteration
  uint64_t iteration_ = 0;
  uint64_t iterations_ = 1;
  sc_core::sc_time finish_;
};

}  // namespace tessera::models
