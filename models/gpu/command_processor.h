// The GPU's command processor: runs its rank's program with CUDA-stream semantics. An op is
// issued when its stream predecessor and its explicit dependencies have completed; compute ops
// go to the compute engine, copies to the copy engine, collectives and send/receive to the
// collective engine, each as an AT transaction whose BEGIN_RESP completes the op.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <systemc>

#include "models/collectives/few_by_key.h"
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

// Told how far followers' communication completed from their representative's
// (CommandProcessor::follow): how far the replay may be from every GPU's own run.
class SymmetryMonitor {
 public:
  virtual ~SymmetryMonitor() = default;
  // Op `op` completed on `representative` and all its followers, the farthest (`follower`)
  // `seconds` apart.
  virtual void skew(int representative, int follower, uint32_t op, double seconds) = 0;
  // A follower completed op `op` twice before its representative did once, or the reverse.
  virtual void diverged(int follower, int representative, uint32_t op) = 0;
  // A call `follower` replays completed at `since` on it or on its representative and not on the
  // other: unless the other completes it soon, the follower parts from its representative
  // (CommandProcessor::part) where it can, and replays on where it cannot.
  virtual void apart(int follower, sc_core::sc_time since) = 0;
};

// The compute event of compute or copy op `index` of `rank`'s program: what the compute engine
// and the compute model (KernelTimer) see of it.
void fill_compute_event(protocol::ComputeEvent& e, const workloads::Job& job, int rank,
                        uint32_t index, const workloads::Op& op);

// The collective event of collective or send/receive op `index` of `rank`'s program, numbered
// `call` on its communicator (kNoCall: unnumbered).
void fill_communication_event(protocol::CollectiveEvent& e, const workloads::Job& job, const workloads::Rank& rank,
                              uint32_t index, const workloads::Op& op, uint32_t call);

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

  // Makes this GPU a follower of `representative`, before either is loaded (a follower is
  // loaded with its own rank, which runs the representative's program, and keeps no state per
  // op): it runs no op of its own; each communication op the representative issues, it issues
  // at the same time with its own communicators and peers, so its collective engine takes its
  // part in every call and the fabric carries its traffic. When an op has completed
  // on the representative and all its followers, `monitor` learns how far apart.
  void follow(CommandProcessor& representative, SymmetryMonitor& monitor);
  bool follower() const { return leader_ != nullptr; }
  // A follower: the communicator slots and send/receive peer slots of its program whose calls it
  // leaves out (every member a follower whose traffic no simulated GPU's shares:
  // workloads::quiet_nodes); its representative's calls on them are not replayed here.
  void leave_out(std::vector<bool> communicator_slots, std::vector<bool> peer_slots);
  // Leaves out these slots' calls too (a follower whose calls across the network another GPU of
  // its node stands for: SymmetricRun's rail images).
  void leave_out_also(const std::vector<bool>& communicator_slots, const std::vector<bool>& peer_slots);
  // A follower in an echo node (workloads::echo_nodes): per op of its program, whether its
  // representative makes the call alone (CollectiveEngine::echo); those it does not replay.
  void leave_out_echoed(std::shared_ptr<const std::vector<bool>> ops);
  // A follower: whether it replays op `op` (it does not leave it out).
  bool replays(uint32_t op) const;
  // A follower: every op it issued completed and matched its representative's.
  bool in_step() const { return replaying_ == 0 && unmatched_.size() == 0; }
  // A follower: whether a call it replays completed on one side only (it or its representative)
  // and not on the other yet; `since`: the first such completion.
  bool apart_since(sc_core::sc_time& since) const;
  // A follower: the GPU it replays now (its representative, or a follower of it that parted).
  const CommandProcessor* leader() const { return leader_; }
  int rank() const { return rank_->rank; }
  // A follower: its calls apart, each with the side it completed on and when, in op order. Two
  // followers of one GPU with the same calls apart stand where a GPU's own run would put them
  // alike so far (SymmetricRun: one of them parts, the others replay it).
  std::vector<std::tuple<uint32_t, bool, sc_core::sc_time>> apart_calls() const;

  // Parting (docs/fidelity.md, "Parting"): a follower whose calls complete apart from its
  // representative's stops following it and runs its own program from the representative's
  // state, as every GPU does without symmetry. Whether it can: false where an op that waits for
  // a call apart (one the representative completed and this GPU did not) has completed on the
  // representative already, or an op apart is not what a replay leaves it.
  bool can_part() const;
  // Takes over the representative's state (Gpu::part copies its activity first and its kernels
  // after): its ops complete are complete here, but for a call it completed that this GPU did
  // not, which stays in flight with what waits for it unissued (but for calls this GPU replayed
  // already, issued with the representative's); the calls in flight that this GPU replays are
  // its own; those its representative makes for it (left out) complete when the
  // representative's do. Then resume() completes the calls this GPU completed and the
  // representative did not.
  void part();
  void resume();
  // A follower whose calls apart are those of `parted` (apart_calls), which parted from the
  // same representative and resumed: it replays `parted` from now on. Its calls in flight stay
  // in flight and match `parted`'s (in flight there too); those it completed ahead of the
  // representative `parted` completed too; those `parted` issued as it resumed it replays now.
  void follow_parted(CommandProcessor& parted);
  // A parted GPU: a transaction for kernel `op`, which the representative's engine runs or
  // queues, where it is issued here (null where it waits for a call apart).
  tlm::tlm_generic_payload* kernel_payload(uint32_t op);
  // A parted GPU: the calls it left out that its representative issued and that wait here for
  // a call apart (part()).
  const std::vector<uint32_t>& unissued_calls() const { return unissued_calls_; }
  // The communicators whose calls this follower left out (leave_out): its collective engine
  // joins their calls late, at the first it makes itself once parted.
  std::vector<int> left_out_communicators() const;
  // A parted GPU makes call `op`, which its representative made for it, itself from now on (a
  // member of the call parted with the call unissued: it waits for every member).
  void take_over(uint32_t op);

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
  void replay(uint32_t op);
  // Op `index` completed on the representative (`leader`) or on this follower.
  void matched(uint32_t index, bool leader);
  // A representative: a follower no longer replays `op` (it parted).
  void forget(uint32_t op);
  // A representative: its followers, each with the ops it replays (replay_table).
  void add_follower(CommandProcessor* follower);
  void remove_follower(CommandProcessor* follower);
  struct Follower;
  // A representative: the ops a follower replays, a table shared by the followers that leave out
  // the same slots and echoes of the same program, built on first use. What a follower leaves
  // out is set before the run starts, or anew as it moves to another GPU (SymmetricRun's parting
  // echoing: leave_out, then follow_parted, which files it there without a table).
  const std::vector<bool>& replay_table(Follower& follower);
  // A parted GPU: its representative completed call `op`, which it made for it.
  void made_call_done(uint32_t op, sc_core::sc_time issued);
  // Call `op` completed here (made here or, made for this GPU, where it parted from): the GPUs
  // that parted from this one while it was in flight, which this one made it for, complete it
  // too, and those that parted from them in turn.
  void made_calls_done(uint32_t op, sc_core::sc_time issued);
  // A collective or send/receive `op` issued at `issued` ends: its communication time and span.
  void call_closed(uint32_t op, sc_core::sc_time issued);
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
  // Following (follow): the representative, or its followers; per op issued and completed on
  // one side only, when and on which.
  CommandProcessor* leader_ = nullptr;
  // A representative's followers, each with its replay_table (nullptr until first needed): a
  // check per follower and call reads this array alone, not the follower. A follower that
  // leaves (it parts, or follows a GPU that parted) leaves its entry empty (gpu null), and the
  // entries are closed up, in order, once half are empty: tens of thousands of followers of one
  // GPU part or move, and each removal read and moved the array.
  struct Follower {
    CommandProcessor* gpu;
    const std::vector<bool>* replays;
  };
  std::vector<Follower> followers_;
  size_t followers_gone_ = 0;  // empty entries in followers_
  size_t follower_at_ = 0;     // a follower: its entry in its leader's followers_
  // The replay tables, each with what its followers leave out.
  struct ReplayTable {
    const workloads::Program* program;
    std::vector<bool> quiet_communicators, quiet_peers;
    std::shared_ptr<const std::vector<bool>> echoed;
    std::vector<bool> ops;
  };
  std::vector<std::unique_ptr<ReplayTable>> replay_tables_;
  std::vector<bool> quiet_communicators_, quiet_peers_;  // a follower's slots left out
  std::shared_ptr<const std::vector<bool>> echoed_;       // a follower's ops left out (echoes)
  SymmetryMonitor* symmetry_ = nullptr;
  struct Unmatched {
    sc_core::sc_time at;
    bool leader = false;
  };
  FewByKey<Unmatched> unmatched_;  // by op: a handful at a time
  // Parting: the representative parted from, and the calls of its that waited here for a call
  // apart; a representative: per op, the parted GPUs whose call on it it still makes.
  CommandProcessor* parted_from_ = nullptr;
  std::vector<uint32_t> unissued_calls_, early_;
  FewByKey<std::vector<CommandProcessor*>> made_for_;
  // A representative: per op completed on some of its followers, the farthest apart so far.
  struct Skew {
    double seconds = 0;
    int farthest = -1;       // the follower that completed it `seconds` apart
    uint32_t followers = 0;  // that completed it
    uint32_t replaying = 0;  // that replay it
  };
  FewByKey<Skew> skews_;
  void skewed(uint32_t index, double seconds, int follower);
  uint64_t replaying_ = 0;  // ops a follower issued and that have not completed
  uint64_t completed_ = 0;  // in the current iteration
  uint64_t total_ = 0;      // ops of one iteration
  uint64_t iteration_ = 0;
  uint64_t iterations_ = 1;
  sc_core::sc_time finish_;
};

}  // namespace tessera::models
