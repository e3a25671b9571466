// A collective call's schedule on one rank, as NCCL keeps one per algorithm: phases of
// transfers, each phase's sends gated by the receives of the phase it follows. Each algorithm
// builds its schedule in its own file (schedule_ring.cpp, schedule_tree.cpp, ...) through a
// ScheduleBuilder; the collective engine runs any of them the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/collectives/tuner.h"
#include "tlm/aggregation_tree.h"
#include "tlm/extensions.h"

namespace tessera::models {

// One peer's share of a phase: its bytes cut into chunks over the call's channels.
struct Transfer {
  int peer = -1;             // rank (receives: -1 when the switch sends it)
  uint64_t bytes = 0;
  uint32_t chunk_bytes = 0;
  uint32_t chunks = 0;
  uint32_t steps = 1;        // steps in series it stands for (steady state: merged steps)
  uint32_t step_chunk_bytes = 0;  // steady state: the chunk of one of those steps
  uint32_t moving_steps = 0;      // steady state: the steps it moves data in (0: steps)
  // Its channels: chunk j runs on first_channel + stride * (j mod channels); channels 0:
  // all of the call's (chunk j on channel j mod C).
  uint16_t first_channel = 0, stride = 1, channels = 0;
  // The channels it runs on, on a call of `call_channels`.
  uint32_t lanes(int call_channels) const { return channels > 0 ? channels : uint32_t(std::max(1, call_channels)); }
  double rate_cap = 0;       // steady state: its channels' payload bytes/s (0: no limit)
  double tail_rate_cap = 0;  // steady state, a tree's tail (Phase::tail_waits): its channels' rate
};

struct Phase {
  std::vector<Transfer> sends, receives;
  int after = -1;            // phase whose receives gate this phase's sends
  int also_after = -1;       // a second phase whose receives gate them too (-1: none)
  uint32_t send_chunks = 0;  // most chunks of any send
  uint64_t receive_chunks = 0;
  uint32_t together = 1;     // flow fidelity: chunks of a connection in flight at once
  // Flow fidelity's tree (CollectiveEngine::steady_tree): every chunk but the last (the tail)
  // leaves at once; the tail waits for every chunk of the phases that gate it.
  bool tail_waits = false;
  protocol::TransferPurpose purpose = protocol::TransferPurpose::Collective;
  const int* members = nullptr;  // in-switch reduction and multicast: the members
  uint32_t member_count = 0;
  const protocol::AggregationTree* tree = nullptr;  // in-network reduction
  float wire_factor = 0;     // 0: the call's
  bool network = false;      // its receives come through the network (network step latency)
};

// The call as every schedule sees it from this rank.
struct ScheduleCall {
  protocol::CollectiveOp kind = protocol::CollectiveOp::AllReduce;
  uint64_t bytes = 1;                   // at least 1 (a barrier: one per member)
  const uint64_t* splits = nullptr;     // AllToAllV: n x n bytes
  const std::vector<int>* ranks = nullptr;  // the communicator's members, in ring order
  int position = 0;                     // this rank's place among them
  int rank = 0;                         // this rank
  int channels = 1;                     // the call's channels (C)
  uint64_t chunk_bytes = 0;             // the engine's chunk
  uint32_t slots = 8;                   // chunks a connection has in flight (packet fidelity)
  bool steady_state = false;            // flow fidelity: few chunks per transfer
  bool reduce_part = false, gather_part = false;  // all-reduce has both
};

class ScheduleBuilder {
 public:
  ScheduleBuilder(const ScheduleCall& call, std::vector<Phase>& phases) : call(call), phases_(phases) {}

  const ScheduleCall& call;
  int n() const { return static_cast<int>(call.ranks->size()); }
  const std::vector<int>& ranks() const { return *call.ranks; }
  // The member at `position` of the ring (any integer, taken modulo n).
  int rank_at(int position) const;
  // A new phase gated by phase `after` (-1: none).
  Phase& add(int after);
  int last() const { return static_cast<int>(phases_.size()) - 1; }
  // The last phase, or -1 before the first: a phase that follows everything so far.
  int after_last() const { return phases_.empty() ? -1 : last(); }
  // `bytes` to or from `peer` over `channels`, in chunks of `chunk_bytes` (0: the engine's).
  Transfer transfer(int peer, uint64_t bytes, int channels, uint64_t chunk_bytes = 0) const;
  Transfer transfer(int peer, uint64_t bytes) const { return transfer(peer, bytes, call.channels); }
  // The chunk packet fidelity cuts `bytes` into over `channels` (chunks of `chunk_bytes`, 0: the
  // engine's): what a step forwards, stored at each hop and handshaken per channel, which flow
  // fidelity's steady state charges as the step's (Transfer::step_chunk_bytes).
  uint32_t step_chunk(uint64_t bytes, int channels, uint64_t chunk_bytes = 0) const;
  // The same for a schedule that reduces in the switches (NVLS, collnet). In flow fidelity a
  // switch adds up a chunk once every member's has come, so each chunk is one stage of the
  // pipeline through the switch, and the pipeline's fill costs a chunk per phase in series. A
  // chunk there is a window: a connection's `slots` chunks in flight in packet fidelity shared
  // among the `phases` in series (16 to kMaxChunksPerTransfer chunks per transfer).
  Transfer windowed(int peer, uint64_t bytes, int channels, int phases, uint64_t chunk_bytes = 0) const;

 private:
  Transfer sized(int peer, uint64_t bytes, uint64_t chunk) const;
  std::vector<Phase>& phases_;
};

uint64_t ceil_div(uint64_t a, uint64_t b);

// One member's place in tree `t` of NCCL's double binary tree over `count` members
// (src/graph/trees.cc ncclGetDtree): tree 0 the in-order binary tree, tree 1 its mirror image
// (an even count) or tree 0 shifted by one member (an odd count). Members are indices
// 0 .. count - 1.
struct TreeLinks {
  int parent = -1;            // -1: the root
  std::vector<int> children;  // at most two
};
TreeLinks double_binary_tree(int count, int index, int t);
// An all-reduce's part across nodes as NCCL's NVLS-tree runs it: a double binary tree over
// `across` (the members at this rank's place in every node, this rank at index `member`), each
// tree carrying half of this rank's `shard`, reduced up and broadcast down chunk by chunk once
// phase `reduced` (the reduction inside the node; -1: none) has it, in chunks of at most
// `chunk_bytes` (0: the engine's). Returns the phases whose receives complete each tree's
// half: its down phase, or the root's up phase.
std::pair<int, int> tree_across(ScheduleBuilder& b, const std::vector<int>& across, int member, uint64_t shard,
                                int reduced, uint64_t chunk_bytes = 0);
// The most bytes one chunk (one flow) carries.
constexpr uint64_t kMaxChunkBytes = 0xffffffffu;

// One builder per algorithm (NCCL's names where it has them).
void ring_schedule(ScheduleBuilder& b, const CommunicatorShape& shape);
// Tree: members grouped by node as `gpus_per_node` says (0: one node), by the shape's blocks
// where it has them (CommunicatorShape::node_blocks).
void tree_schedule(ScheduleBuilder& b, int gpus_per_node, const CommunicatorShape& shape);
// All-to-all as NCCL's grouped sends and receives (Tuner::runs_p2p): the peer k places on runs
// on p2p_plan's channels of round k, with `gpus_per_node` telling peers across nodes
// (0: one node).
void direct_schedule(ScheduleBuilder& b, const Tuner& tuner, int gpus_per_node);
void halving_doubling_schedule(ScheduleBuilder& b);
void hierarchical_schedule(ScheduleBuilder& b, const CommunicatorShape& shape);
// `nvls_chunk`: NCCL's NVLS chunk for the call (Tuner::nvls_chunk).
void nvls_schedule(ScheduleBuilder& b, uint64_t nvls_chunk);
// CollNet Direct: `node` the members in this rank's node, `tree` the SHARP tree of the GPUs at
// this rank's place in every node; `nvls`: the NVSwitches reduce inside the node, with
// `nvls_wire_factor`.
void collnet_schedule(ScheduleBuilder& b, const std::vector<int>& node, const protocol::AggregationTree* tree,
                      bool nvls, float nvls_wire_factor);
// NVLS-tree: `node` the members in this rank's node, `across` the members at this rank's place
// in every node (in communicator order), `chunk_bytes` NCCL's chunk (Tuner::nvls_tree_chunk),
// `nvls_wire_factor` the switches' at that chunk (Tuner::nvls_wire_factor).
void nvls_tree_schedule(ScheduleBuilder& b, const std::vector<int>& node, const std::vector<int>& across,
                        uint64_t chunk_bytes, float nvls_wire_factor);

}  // namespace tessera::models
