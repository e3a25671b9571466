// The collective engine a GPU runs: an NCCL-like library that turns a collective call into
// chunked fabric transfers.
//
// A call becomes a schedule (plan): a list of phases, each with the transfers this rank sends
// and receives (peer, bytes) and the phase whose receives gate its sends. Chunk j of a phase
// leaves as soon as the gating phase has received its proportional share (j+1)/chunks of its
// chunks, so the steps of every algorithm pipeline chunk by chunk:
//  - ring: 2(n-1) phases for all-reduce (n-1 for reduce-scatter/all-gather), each sending one
//    segment to the ring successor; chain broadcast/reduce is one self-gated phase;
//  - tree: NCCL's double binary tree: two complementary trees (the in-order binary tree over
//    the nodes and its mirror or shifted image, a chain inside each node), each carrying half
//    the data, reduce up then broadcast down;
//  - direct: one-shot exchange (all-reduce: reduce-scatter to shard owners, then all-gather);
//  - halving-doubling: log2 n reduce-scatter phases with partners n/2, n/4, .., 1 apart, then
//    log2 n all-gather phases back;
//  - hierarchical: per dimension (innermost first) a ring reduce-scatter, then all-gathers in
//    reverse: reduce-scatter in the node, all-reduce across nodes, all-gather in the node;
//  - nvls: every rank sends each shard to the switch, which reduces and sends the sum to the
//    shard's owner; the owner multicasts it through the switch to every member;
//  - collnet: reduce-scatter inside the node (NVLS where the NVSwitches reduce, else direct),
//    then each GPU's shard climbs an aggregation tree of network switches through the GPU's
//    own NIC and the sum comes back down (InfiniBand SHARP), then all-gather inside the node.
// The tuner (tuner.h) picks algorithm, protocol and channel count unless the call or the
// engine configuration forces them. Protocols cost a launch latency per call, a step latency
// per dependent step (less what the fabric itself takes) and their flag bytes on the wire.
// Chunk j runs on channel j mod C; a channel uses one SM while the call runs. A connection
// (one transfer of a phase) has `slots` chunks in flight at most, as NCCL's NCCL_STEPS buffer
// slots: the next leaves when one has left the GPU.
// Members are matched by communicator and call number: a call's place among the rank's
// collectives on that communicator in program order (NCCL's rule: the host enqueues a
// communicator's calls in program order, whatever streams they run on), not the order the
// calls start in, which differs between ranks when two streams share a communicator (ZeRO-3's
// parameter all-gathers and gradient reduce-scatters over dp). Chunks that arrive before a
// rank has joined are kept (as (step, chunk) pairs) and counted when it joins.
#pragma once

#include <cstdint>
#include <string>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <systemc>

#include "models/collectives/communicator_table.h"
#include "models/collectives/few_by_key.h"
#include "models/collectives/schedule.h"
#include "models/collectives/tuner.h"
#include "models/link/fabric_port.h"
#include "tlm/aggregation_tree.h"
#include "tlm/extensions.h"
#include "tlm/payload_event_queue.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"
#include "workloads/program.h"

namespace tessera::models {

// Puts a chunk on the GPU's fabric ports.
class FabricInjector {
 public:
  virtual ~FabricInjector() = default;
  virtual void inject(tlm::tlm_generic_payload& gp, PacketSource& source) = 0;
};

// Where a flow ends (flow fidelity): the destination GPU's collective engine, which releases the
// payload. The flow fabric calls it directly, not through its GPU: an arrival then reads the one
// record it changes (at tens of thousands of GPUs, a GPU's record is one more cache miss).
class FlowSink {
 public:
  virtual ~FlowSink() = default;
  virtual void flow_arrived(uint32_t rank, tlm::tlm_generic_payload& gp) = 0;
};

// Learns how many SMs the running collectives hold (the GPU slows its compute engine).
class SmObserver {
 public:
  virtual ~SmObserver() = default;
  virtual void collective_sms_changed(int sms) = 0;
};

// The in-network reduction (SHARP) tree over some GPUs' network ports; the platform builds it
// from its topology (platforms/aggregation.h) and keeps it while the simulation runs.
class AggregationTrees {
 public:
  virtual ~AggregationTrees() = default;
  virtual const protocol::AggregationTree& tree(const std::vector<int>& ranks) = 0;
};

struct CollectiveEngineConfig {
  uint64_t chunk_bytes = 128 * 1024;  // most bytes per fabric chunk
  uint32_t slots = 8;                 // chunks in flight per connection (NCCL_STEPS)
  int gpus_per_node = 0;              // node = rank / gpus_per_node; 0: all ranks in one node
  std::vector<int> dimensions;        // hierarchical dimensions, innermost first; empty:
                                      // {gpus_per_node, nodes}
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Automatic;  // forced where it applies
  CollectiveProtocol protocol = CollectiveProtocol::Automatic;
  int channels = 0;                   // 0: the tuner's count
  bool protocol_latencies = true;     // false: no launch/step latency (closed-form tests)
  // Flow fidelity (docs/fidelity.md): a pipelined schedule runs as its steady state. Ring,
  // hierarchical, direct and halving-doubling calls become one phase whose transfers (all steps
  // to one peer summed) start at once, one flow each, which arrives no earlier than the latency
  // chain of the steps it stands for (FabricTransfer::steps). Tree calls keep their phases with
  // at most 16 chunks per transfer; a send/receive message is one flow.
  bool steady_state = false;
  TunerConfig tuner;
  FabricFacts fabric;                 // filled in by the platform builder
  AggregationTrees* trees = nullptr;  // filled in by the platform builder (collnet)
  // The job's communicators, shared by every engine (filled in by the platform builder; an
  // engine without one builds its own).
  std::shared_ptr<const CommunicatorTable> communicators;
};

// What every collective engine of a platform reads alike: its configuration and the tuner made
// from it, made once and shared (each engine's own copy was 1 KB of its 2.7 KB, read on every
// chunk: on 65,536 GPUs, 64 MiB of identical lines).
struct CollectiveSettings {
  explicit CollectiveSettings(const CollectiveEngineConfig& config);
  CollectiveEngineConfig config;
  Tuner tuner;
};

class CollectiveEngine;

// The launch, step and drain latencies of every collective engine of a platform, and their
// finished calls, in one queue: one event and one process for them all. (An engine's own queue
// cost its event and its process, each a cache miss at every chunk's step handshake once tens
// of thousands of GPUs' engines outgrow the cache: about 8% of a 65,536-GPU iteration's time,
// 3% at 16,384; docs/fidelity.md, "The last step".)
class CollectiveLatencies : public protocol::PayloadEventQueue<CollectiveEngine> {
 public:
  explicit CollectiveLatencies(const char* name);
};

class CollectiveEngine : public sc_core::sc_module, public PacketSource, public FlowSink {
 public:
  protocol::TargetSocket<CollectiveEngine> socket;

  // `latencies`: the queue every engine of the platform shares.
  CollectiveEngine(sc_core::sc_module_name name, int rank, const workloads::Job& job,
                   protocol::PayloadPool& pool, FabricInjector& fabric, CollectiveLatencies& latencies,
                   std::shared_ptr<const CollectiveSettings> settings, SmObserver* sms = nullptr);

  // A chunk for this GPU arrived from the fabric; the engine consumes (releases) it.
  void chunk_arrived(tlm::tlm_generic_payload& gp);
  // The same from the flow fabric, for GPU `rank` (this one's, or the run stops).
  void flow_arrived(uint32_t rank, tlm::tlm_generic_payload& gp) override;
  // Throws std::runtime_error where `gp` arrives at another GPU than this engine's.
  void check_receiver(tlm::tlm_generic_payload& gp) const;
  // Flow fidelity: chunks go straight to the flow fabric, not through the GPU's injector (which
  // would hand them on: one record fewer to read per chunk).
  void inject_into(FabricInjector& fabric) { fabric_ = &fabric; }
  // A chunk this engine injected has left the GPU.
  void packet_left(tlm::tlm_generic_payload& gp) override;

  // Calls 0 .. joined(c) - 1 on communicator c have all started on this rank (0: not a member).
  uint32_t joined(int communicator) const;
  // Whether this rank has started call `call` on the communicator.
  bool joined(int communicator, uint32_t call) const;
  // The calls on `communicator` below the next this rank starts were made without it (a
  // follower that left them out, then parted: CommandProcessor::part): it joins from there.
  void join_late(int communicator);

  struct Waiting {
    uint32_t op = 0;
    std::string what;           // e.g. "allreduce on dp (call 3), 12 of 14 chunks missing"
    int communicator = -1;      // -1 for send/receive
    uint32_t sequence = 0;
    int peer = -1;              // send/receive peer
  };
  std::vector<Waiting> waiting() const;

  uint64_t bytes_injected() const { return bytes_injected_; }
  uint64_t bytes_received() const { return bytes_received_; }
  // Of those, to and from GPUs of its own node (what a quiet node's follower leaves out).
  uint64_t bytes_injected_in_node() const { return bytes_injected_in_node_; }
  uint64_t bytes_received_in_node() const { return bytes_received_in_node_; }
  int sms_in_use() const { return sms_in_use_; }
  const Tuner& tuner() const { return tuner_; }
  // The communicator's shape as the tuner sees it (nodes from gpus_per_node).
  CommunicatorShape shape(int communicator) const;
  // What the k-th collective call of any rank with this event will run (same on every member).
  Choice choice(const protocol::CollectiveEvent& e) const;

  // Flow fidelity, a symmetric run's echo node (workloads::echo_nodes): this rank's calls on
  // `communicator`, which holds its whole node, are made by this rank alone; the other members
  // follow it and leave them out. Each of its transfers is marked an echo (FabricTransfer::
  // echo): the fabric carries it to its peer, hands it back to this rank as what the peer at the
  // same distance before it sent, and counts the peers' transfers, its images, on their links.
  // Only a ring in its steady state is its members' images (each sends to the next what it
  // receives from the one before), and NVLS, where every member sends each owner its shard
  // through the switch that owner's chunks take (FlowFabric::echo_reduced, echo_multicast): a
  // call on the communicator that runs anything else (a small all-reduce's tree) is made by
  // every member as usual.
  void echo(int communicator);
  // Whether the call `e` can be echoed: a ring or NVLS all-reduce, reduce-scatter or
  // all-gather in flow fidelity.
  bool echoes(const protocol::CollectiveEvent& e) const;

 private:
  using Transfer = models::Transfer;
  using Phase = models::Phase;
  // A call's schedule as planned for this rank: every call of the same shape shares it
  // (planned_), and no call writes to it; what a call has done is its Instance's.
  struct Plan {
    CollectiveOp kind = CollectiveOp::AllReduce;
    int communicator = -1;
    Choice choice;
    float wire_factor = 1.0f;
    sc_core::sc_time step_delay, network_step_delay;
    // A channel (one SM) moves at most channel_rate payload bytes/s (0: no limit); packet
    // fidelity times `timed_channels` of them (Instance::channel_free).
    double channel_rate = 0;
    double channel_handshake_s = 0;  // the SM's wait per chunk (the step's latency)
    size_t timed_channels = 0;
    // Seconds from the last chunk's arrival to the call's end: a point-to-point exchange's
    // receivers copy their last chunk out of their buffers (P2pPlan::drain_s).
    double drain_s = 0;
    bool point_to_point = false;  // grouped sends and receives (Tuner::runs_p2p)
    std::vector<Phase> phases;
    // The phases phase k gates: gates[gates[k] .. gates[k + 1]) (the bounds first, one entry a
    // phase and one more, then the gated phases: one buffer for a chunk's arrival to read).
    std::vector<uint32_t> gates;
    uint64_t sends_expected = 0, recvs_expected = 0;
    bool echo = false;  // made by this rank alone (echo())
  };
  // What one phase of a call has done.
  struct Progress {
    uint64_t received = 0;   // chunks
    uint32_t next = 0;       // next chunk index to send
    uint32_t in_flight = 0;  // chunks injected that have not left the GPU yet
  };
  // A call on this rank. What a chunk's arrival reads comes first, its phases' progress inside
  // it for the calls of a few phases (a tree's four: its own line, not another allocation).
  struct Instance {
    const Plan* plan = nullptr;  // set when this rank joins (with `call`)
    tlm::tlm_generic_payload* call = nullptr;  // the command processor's transaction
    uint64_t sends_done = 0, recvs_done = 0;
    uint32_t sequence = 0;
    bool launched = false;
    bool finishing = false;
    static constexpr size_t kInPlace = 4;
    Progress in_place[kInPlace];
    std::vector<Progress> beyond;  // phases from kInPlace on
    std::unique_ptr<Plan> own;   // a plan of this call alone (an all-to-all-v's sizes)
    std::vector<double> channel_free;  // packet fidelity: when each channel is next free, seconds
    std::vector<uint64_t> early;  // (step << 32 | chunk) that arrived before this rank joined
    // Phase k's progress, of `phases` set by track().
    Progress& progress(size_t k) { return k < kInPlace ? in_place[k] : beyond[k - kInPlace]; }
    void track(size_t phases) {
      std::fill(std::begin(in_place), std::end(in_place), Progress{});
      beyond.assign(phases > kInPlace ? phases - kInPlace : 0, Progress{});
    }
  };
  // A communicator's groups for the schedules that reduce in the node first (collnet,
  // NVLS-tree): this rank's node, the members at the same place in every node (in
  // communicator order) and, for collnet, their SHARP tree. Kept for the engine's life: chunks
  // in flight point at them.
  struct NodeGroups {
    std::vector<int> node, across;
    const protocol::AggregationTree* tree = nullptr;  // built on collnet's first use
  };
  struct PointToPoint {
    uint64_t available = 0;       // bytes arrived and not yet claimed by a receive
    std::vector<tlm::tlm_generic_payload*> receives;  // waiting receives, in issue order
  };
  // A send in flight: its chunks left and to leave.
  struct Send {
    tlm::tlm_generic_payload* call = nullptr;
    uint64_t expected = 0, done = 0;
  };

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void start_collective(tlm::tlm_generic_payload& call);
  // The call's number on its communicator: its place in program order, which the command
  // processor numbered; a call it did not number, the order the calls start in.
  uint32_t call_number(const protocol::CollectiveEvent& e);
  void launch(uint64_t flow);
  void start_send(tlm::tlm_generic_payload& call);
  void start_receive(tlm::tlm_generic_payload& call);
  // The call's schedule: a plan made before for a call of the same shape (planned_), or a
  // new one (plan_schedule).
  void plan(Instance& inst, const protocol::CollectiveEvent& e);
  void plan_schedule(Plan& plan, const protocol::CollectiveEvent& e);
  void steady_state(Plan& plan) const;
  void steady_nvls_tree(Plan& plan) const;
  void steady_tree(Plan& plan) const;
  // Whether rank `peer` is on another of the platform's nodes (its chunks cross the network).
  bool on_another_node(int peer) const;
  void count_injected(const protocol::FabricTransfer& t);
  bool in_node(const protocol::FabricTransfer& t, uint32_t peer) const;
  NodeGroups& node_groups(int communicator);
  // A transfer of `bytes` to `peer` in chunks of at most chunk_bytes (0: the engine's chunk)
  // spread over `channels`.
  void pump(uint64_t flow, Instance& inst, size_t phase);
  void send_chunk(uint64_t flow, Instance& inst, const Phase& phase, uint32_t step,
                  const Transfer& to, uint32_t chunk);
  void received(uint64_t flow, Instance& inst, uint32_t step);
  void check_done(uint64_t flow, Instance& inst);
  // Completes the receives the bytes arrived from a peer cover; forgets the peer's tag once
  // nothing waits and nothing is left over.
  void match_receives(uint64_t key, PointToPoint& p2p);
  // The instance of a flow (made on first use), and its removal once the call is done.
  Instance& instance(uint64_t flow);
  void forget(uint64_t flow);
  void finish(tlm::tlm_generic_payload* call);
  // Hands a finished call back to the command processor (in the delta cycle after it finished),
  // the flows finished since forgotten first.
  void deliver_finished(tlm::tlm_generic_payload& call);
  friend class CollectiveLatencies;
  void delayed(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);
  void add_sms(int delta);
  // This rank's membership index in `communicator`; throws std::logic_error where it is none.
  size_t membership(int communicator) const;
  long find_membership(int communicator) const;  // -1 where it is none

  // What a chunk's arrival and departure read, together at the front: a data-parallel phase
  // visits every GPU's engine, and on 65,536 GPUs their lines do not stay in the cache.
  std::shared_ptr<const CollectiveSettings> settings_;
  const CollectiveEngineConfig& config_;  // settings_'s
  const Tuner& tuner_;                    // settings_'s
  int rank_;
  int sms_in_use_ = 0;
  protocol::PayloadPool& pool_;
  FabricInjector* fabric_;  // its GPU's ports, or the flow fabric itself (inject_into)
  CollectiveLatencies& latencies_;  // launch, step and drain latencies, and finished calls
  SmObserver* sm_observer_;
  // The instance looked up last: a call's chunks arrive and leave in runs, and finding an
  // instance by its flow (a prime modulo and a node in another cache line) was the largest
  // single cost of a flow-fidelity run with many data-parallel replicas.
  uint64_t last_flow_ = 0;
  Instance* last_instance_ = nullptr;
  uint64_t bytes_injected_ = 0;
  uint64_t bytes_received_ = 0;
  uint64_t bytes_injected_in_node_ = 0, bytes_received_in_node_ = 0;
  std::unordered_map<uint64_t, Instance> instances_;        // by flow (communicator, call)
  std::vector<uint64_t> finished_flows_;
  const workloads::Job& job_;
  std::shared_ptr<const CommunicatorTable> communicators_;
  const CommunicatorTable::Membership* memberships_ = nullptr;  // this rank's communicators
  size_t membership_count_ = 0;
  // By membership (this rank's communicators in ascending order): every call below `joined`
  // has started; `started` unnumbered calls have.
  struct Calls {
    uint32_t joined = 0, started = 0;
  };
  std::vector<Calls> calls_;
  std::vector<bool> echoed_;  // by membership: its calls are echoed (echo())
  std::vector<bool> late_;    // by membership: joins late (join_late())
  std::unordered_set<uint64_t> joined_ahead_;  // (communicator, call) started out of order
  std::unordered_map<int, NodeGroups> node_groups_;        // by communicator, on first use
  // Fresh plans by (bytes, communicator | kind | algorithm | protocol): a program repeats each
  // call shape many times, and planning (the tuner's choice, the schedule, its steady state)
  // is most of what a call costs the simulator.
  std::map<std::pair<uint64_t, uint64_t>, Plan> planned_;  // (a map: instances point at its plans)
  FewByKey<Send> sends_;                // by (peer, tag)
  FewByKey<PointToPoint> receives_;     // by (source, tag)
};

}  // namespace tessera::models
