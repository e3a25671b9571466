#include "models/collectives/collective_engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::models {

using protocol::CollectiveOp;
using protocol::TransferPurpose;
using sc_core::sc_time;

namespace {
DECLARE_EXTENDED_PHASE(LAUNCH);
DECLARE_EXTENDED_PHASE(INJECT);  // a chunk whose channel is free now
DECLARE_EXTENDED_PHASE(DRAINED);  // a receive whose last chunk the receiver has copied out
DECLARE_EXTENDED_PHASE(FINISHED);  // a call to hand back
constexpr uint64_t key(uint64_t high, uint64_t low) { return (high << 32) | (low & 0xffffffffu); }
// The tuner predicts with the engine's chunk size.
TunerConfig tuner_config(const CollectiveEngineConfig& c) {
  TunerConfig t = c.tuner;
  t.chunk_bytes = c.chunk_bytes;
  return t;
}

// The phases each phase gates (received() pumps them), grouped by gating phase, after the
// bounds of each group (Plan::gates).
void gates_of(const std::vector<Phase>& phases, std::vector<uint32_t>& gates) {
  const size_t n = phases.size();
  gates.assign(n + 1, 0);
  for (const Phase& ph : phases)
    for (int gate : {ph.after, ph.also_after})
      if (gate >= 0) ++gates[size_t(gate) + 1];
  gates[0] = static_cast<uint32_t>(n + 1);
  for (size_t k = 0; k < n; ++k) gates[k + 1] += gates[k];
  std::vector<uint32_t> fill(gates.begin(), gates.end() - 1);
  gates.resize(gates.back());
  for (size_t k = 0; k < n; ++k)
    for (int gate : {phases[k].after, phases[k].also_after})
      if (gate >= 0) gates[fill[size_t(gate)]++] = static_cast<uint32_t>(k);
}

}  // namespace

CollectiveSettings::CollectiveSettings(const CollectiveEngineConfig& c) : config(c), tuner(tuner_config(c), c.fabric) {}

CollectiveLatencies::CollectiveLatencies(const char* name)
    : protocol::PayloadEventQueue<CollectiveEngine>(name, &CollectiveEngine::delayed) {}

CollectiveEngine::CollectiveEngine(sc_core::sc_module_name name, int rank,
                                   const workloads::Job& job, protocol::PayloadPool& pool,
                                   FabricInjector& fabric, CollectiveLatencies& latencies,
                                   std::shared_ptr<const CollectiveSettings> settings,
                                   SmObserver* sms)
    : sc_module(name), socket("socket"), settings_(std::move(settings)), config_(settings_->config),
      tuner_(settings_->tuner), rank_(rank), pool_(pool), fabric_(&fabric), latencies_(latencies),
      sm_observer_(sms), job_(job),
      communicators_(config_.communicators
                         ? config_.communicators
                         : std::make_shared<const CommunicatorTable>(job, config_.gpus_per_node, config_.dimensions,
                                                                     config_.fabric.gpus_per_node)) {
  socket.register_nb_transport_fw(this, &CollectiveEngine::nb_transport_fw);
  memberships_ = communicators_->begin(rank);
  membership_count_ = size_t(communicators_->end(rank) - memberships_);
  calls_.assign(membership_count_, Calls{});
}

// This rank's place among its communicators (ascending), or -1.
long CollectiveEngine::find_membership(int communicator) const {
  const auto* end = memberships_ + membership_count_;
  const auto* it = std::lower_bound(memberships_, end, communicator,
                                    [](const CommunicatorTable::Membership& m, int c) { return m.communicator < c; });
  return it == end || it->communicator != communicator ? -1 : long(it - memberships_);
}

size_t CollectiveEngine::membership(int communicator) const {
  const long m = find_membership(communicator);
  if (m < 0)
    throw std::logic_error(std::string(name()) + ": rank " + std::to_string(rank_) + " is not a member of communicator " +
                           std::to_string(communicator));
  return size_t(m);
}

uint32_t CollectiveEngine::joined(int communicator) const {
  const long m = find_membership(communicator);
  return m < 0 ? 0 : calls_[size_t(m)].joined;
}

CommunicatorShape CollectiveEngine::shape(int communicator) const { return communicators_->shape(communicator); }

Choice CollectiveEngine::choice(const protocol::CollectiveEvent& e) const {
  return choose_call(tuner_, e.kind, e.bytes, communicators_->shape(e.communicator), e.algorithm, e.protocol,
                     config_.algorithm, config_.protocol, config_.channels);
}

void CollectiveEngine::echo(int communicator) {
  echoed_.resize(membership_count_, false);
  echoed_[membership(communicator)] = true;
}

void CollectiveEngine::join_late(int communicator) {
  late_.resize(membership_count_, false);
  late_[membership(communicator)] = true;
}

bool CollectiveEngine::echoes(const protocol::CollectiveEvent& e) const {
  const bool kind = e.kind == CollectiveOp::AllReduce || e.kind == CollectiveOp::ReduceScatter ||
                    e.kind == CollectiveOp::AllGather;
  if (!config_.steady_state || !kind || e.splits != nullptr) return false;
  const CollectiveAlgorithm a = choice(e).algorithm;
  return a == CollectiveAlgorithm::Ring || a == CollectiveAlgorithm::Nvls;
}

tlm::tlm_sync_enum CollectiveEngine::nb_transport_fw(tlm::tlm_generic_payload& gp,
                                                     tlm::tlm_phase& phase, sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;
  const protocol::CollectiveEvent& e = protocol::collective_event(gp);
  if (e.kind == CollectiveOp::Send) start_send(gp);
  else if (e.kind == CollectiveOp::Recv) start_receive(gp);
  else start_collective(gp);
  phase = tlm::END_REQ;
  delay = sc_core::SC_ZERO_TIME;
  return tlm::TLM_UPDATED;
}

void CollectiveEngine::plan(Instance& inst, const protocol::CollectiveEvent& e) {
  if (e.splits != nullptr) {  // all-to-all-v: sizes per call
    inst.own = std::make_unique<Plan>();
    plan_schedule(*inst.own, e);
    inst.plan = inst.own.get();
  } else {
    const std::pair<uint64_t, uint64_t> shape{
        e.bytes, uint64_t(uint32_t(e.communicator)) << 24 | uint64_t(e.kind) << 16 | uint64_t(e.algorithm) << 8 |
                     uint64_t(e.protocol)};
    const auto [it, fresh] = planned_.try_emplace(shape);
    if (fresh) {
      try {
        plan_schedule(it->second, e);
      } catch (...) {
        planned_.erase(it);  // (no half-made plan for a later call of the shape)
        throw;
      }
    }
    inst.plan = &it->second;
  }
  inst.track(inst.plan->phases.size());
  inst.channel_free.assign(inst.plan->timed_channels, 0.0);
}

void CollectiveEngine::plan_schedule(Plan& plan, const protocol::CollectiveEvent& e) {
  const auto& ranks = job_.communicators[e.communicator].ranks;
  const CommunicatorShape& shape = communicators_->shape(e.communicator);
  const int n = static_cast<int>(ranks.size());
  const size_t member = membership(e.communicator);
  const int p = memberships_[member].position;
  plan.kind = e.kind;
  plan.communicator = e.communicator;
  plan.choice = choice(e);
  const int C = std::max(1, plan.choice.channels);
  const CollectiveAlgorithm algorithm = plan.choice.algorithm;
  const ProtocolCost cost = tuner_.cost(algorithm, plan.choice.protocol);
  const double handshakes =
      config_.protocol_latencies ? tuner_.handshake_factor(e.kind, algorithm, plan.choice.protocol, e.bytes, shape) : 1.0;
  plan.wire_factor = static_cast<float>(tuner_.wire_factor(algorithm, plan.choice.protocol, e.bytes, n) * handshakes);
  // Grouped sends and receives: each channel at the point-to-point rate (which has its
  // handshakes in it), and the receivers copy their last chunk out at the end.
  const bool p2p = tuner_.runs_p2p(e.kind);
  plan.point_to_point = p2p;
  plan.drain_s = 0;
  if (const double rate = p2p ? tuner_.fabric().p2p_channel_rate : tuner_.channel_rate(plan.choice.protocol); rate > 0) {
    // The channel waits for each step's flags before it moves the step's data (LL and LL128 poll
    // them per line, a Simple channel that reads from its peer waits for the peer's flag), so
    // NCCL's per-step latency adds to the data time (send_chunk).
    const bool waits = config_.protocol_latencies && !p2p;
    const double handshake = waits ? cost.step_us * 1e-6 : 0.0;
    plan.channel_rate = rate;
    plan.channel_handshake_s = handshake;
    if (!config_.steady_state) plan.timed_channels = size_t(C);
  }
  if (config_.protocol_latencies) {
    // What the fabric does not already take of the step's latency.
    const double step = std::max(0.0, cost.step_us * 1e-6 - config_.fabric.hop_latency_s);
    const double network = std::max(0.0, cost.network_step_us * 1e-6 - config_.fabric.network_latency_s);
    plan.step_delay = sc_time(step, sc_core::SC_SEC);
    plan.network_step_delay = sc_time(network, sc_core::SC_SEC);
  }
  if (n == 1) return;  // nothing to exchange
  const uint64_t bytes = std::max<uint64_t>(e.bytes, e.kind == CollectiveOp::Barrier ? n : 1);
  const bool reduce_and_gather = e.kind == CollectiveOp::AllReduce || e.kind == CollectiveOp::Barrier;
  const bool reduce_part = reduce_and_gather || e.kind == CollectiveOp::ReduceScatter;
  const bool gather_part = reduce_and_gather || e.kind == CollectiveOp::AllGather;
  auto& phases = plan.phases;
  ScheduleCall call;
  call.kind = e.kind;
  call.bytes = bytes;
  call.splits = e.splits;
  call.ranks = &ranks;
  call.position = p;
  call.rank = rank_;
  call.channels = C;
  call.chunk_bytes = config_.chunk_bytes;
  call.slots = config_.slots;
  call.steady_state = config_.steady_state;
  call.reduce_part = reduce_part;
  call.gather_part = gather_part;
  ScheduleBuilder builder(call, phases);
  switch (algorithm) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring: ring_schedule(builder, shape); break;
    case CollectiveAlgorithm::Tree: tree_schedule(builder, config_.gpus_per_node, shape); break;
    case CollectiveAlgorithm::Direct: direct_schedule(builder, tuner_, config_.fabric.gpus_per_node); break;
    case CollectiveAlgorithm::HalvingDoubling: halving_doubling_schedule(builder); break;
    case CollectiveAlgorithm::Hierarchical: hierarchical_schedule(builder, shape); break;
    case CollectiveAlgorithm::Nvls: nvls_schedule(builder, tuner_.nvls_chunk(bytes, n)); break;
    case CollectiveAlgorithm::NvlsTree: {
      const NodeGroups& groups = node_groups(e.communicator);
      const uint64_t chunk = tuner_.nvls_tree_chunk(bytes, int(groups.node.size()), int(groups.across.size()));
      nvls_tree_schedule(builder, groups.node, groups.across, chunk, float(tuner_.nvls_wire_factor(chunk)));
      break;
    }
    case CollectiveAlgorithm::CollNet: {
      NodeGroups& groups = node_groups(e.communicator);
      const int g = static_cast<int>(groups.node.size());
      const float nvls_factor = float(tuner_.nvls_wire_factor(tuner_.nvls_chunk(bytes, g)));
      if (groups.tree == nullptr) {
        if (config_.trees == nullptr)
          throw std::runtime_error(std::string(name()) + ": collnet needs the platform's aggregation trees");
        groups.tree = &config_.trees->tree(groups.across);
      }
      collnet_schedule(builder, groups.node, groups.tree, config_.fabric.in_switch_reduction, nvls_factor);
      break;
    }
  }
  if (p2p)
    for (const Phase& ph : phases)
      for (const Transfer& t : ph.receives)
        plan.drain_s = std::max(plan.drain_s, tuner_.p2p_plan(t.bytes, n, on_another_node(t.peer)).drain_s);
  if (config_.steady_state) steady_state(plan);
  if (!echoed_.empty() && echoed_[member] && echoes(e)) {
    // A ring's members are each other's images: what this rank receives from the member before
    // it is what it sends to the one after (its own transfers, handed back: echo()). NVLS's
    // are too, through the switch (FlowFabric::echo_reduced, echo_multicast).
    if (algorithm == CollectiveAlgorithm::Ring) {
      if (phases.size() != 1) throw std::logic_error(std::string(name()) + ": an echoed ring of several phases");
      phases[0].receives = phases[0].sends;
    }
    plan.echo = true;
  }
  if (config_.steady_state && plan.channel_rate > 0) {
    // Flow fidelity caps each flow at its channels' rate: what a channel moves of a step (packet
    // fidelity's chunks on it) at the channel's rate, with the step's handshake. A ring's flow
    // has its own channels; other flows of a phase share all of the call's in proportion to
    // their bytes. A tree's phases run at once (steady_tree) and a channel's SM moves every
    // transfer on it, up and down both trees (packet fidelity's channel_free): a tree's bodies
    // share their channels' rate in proportion to their bytes over all its phases; its tails
    // come after the bodies, at the channels' rate.
    std::vector<double> tree_sends;  // a tree's bytes sent on each group of channels (first_channel)
    for (const Phase& ph : phases)
      for (const Transfer& t : ph.sends)
        if (ph.tail_waits) {
          if (tree_sends.size() <= t.first_channel) tree_sends.resize(size_t(t.first_channel) + 1, 0.0);
          tree_sends[t.first_channel] += double(t.bytes);
        }
    for (Phase& ph : phases) {
      double total = 0, lanes_named = 0;
      for (const Transfer& t : ph.sends) total += double(t.bytes), lanes_named += t.channels;
      // Transfers that name more channels than the call has share them (all-to-all's rounds).
      const double shared = lanes_named > C ? double(C) / lanes_named : 1.0;
      for (Transfer& t : ph.sends) {
        const double step = double(t.bytes) / double(std::max<uint32_t>(1, t.moving_steps > 0 ? t.moving_steps : t.steps));
        const double chunk =
            double(std::max<uint32_t>(1, t.steps > 1 || ph.tail_waits ? t.step_chunk_bytes : t.chunk_bytes));
        const double lanes = std::min(std::ceil(step / chunk), double(t.lanes(C)));
        const double lane = step / std::max(1.0, lanes);
        const double channel = lane / (lane / plan.channel_rate + plan.channel_handshake_s);
        if (ph.tail_waits) {
          const double bodies = t.chunks > 1 ? t.chunks - 1 : 1;  // (one below 4 GiB)
          t.rate_cap = channel * double(t.lanes(C)) * double(t.bytes) / tree_sends[t.first_channel] / bodies;
          t.tail_rate_cap = channel * double(t.lanes(C));
          continue;
        }
        const double share = t.channels > 0 ? double(t.channels) * shared : double(C) * double(t.bytes) / std::max(1.0, total);
        t.rate_cap = channel * share / std::max(1u, std::min(t.chunks, ph.together));
        if (p2p && t.peer >= 0 && on_another_node(t.peer)) t.rate_cap = 0;
      }
    }
  }
  gates_of(phases, plan.gates);
  for (Phase& ph : phases) {
    if (ph.wire_factor == 0) ph.wire_factor = plan.wire_factor;
    for (const Transfer& t : ph.sends) {
      ph.send_chunks = std::max(ph.send_chunks, t.chunks);
      plan.sends_expected += t.chunks;
    }
    for (const Transfer& t : ph.receives) ph.receive_chunks += t.chunks;
    plan.recvs_expected += ph.receive_chunks;
  }
}

// Flow fidelity: a schedule whose phases each wait for the previous one (ring, hierarchical,
// direct, halving-doubling) pipelines chunk by chunk, so in its steady state every phase's
// transfers run at once. They become one phase; transfers to the same peer merge into one
// transfer (one flow) that remembers how many steps it stands for.
namespace {

// Adds `t` to the steady state's transfers `into`: merged with the one to the same peer on the
// same channels, whose steps it adds to (the chunk of one step: a transfer may already stand
// for several steps, or name the chunk its step forwards).
void merge_transfer(std::vector<Transfer>& into, const Transfer& t) {
  const uint32_t step_chunk = t.step_chunk_bytes > 0 ? t.step_chunk_bytes : t.chunk_bytes;
  for (Transfer& x : into)
    if (x.peer == t.peer && x.first_channel == t.first_channel) {
      x.bytes += t.bytes;
      x.steps += t.steps;
      x.step_chunk_bytes = std::max(x.step_chunk_bytes, step_chunk);
      return;
    }
  into.push_back(t);
  into.back().step_chunk_bytes = step_chunk;
}

// Cuts a merged transfer into `flows` flows sent together, one chunk each (a chunk's size
// held in 32 bits).
void cut_into_flows(Transfer& t, uint64_t flows) {
  t.chunk_bytes =
      static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(ceil_div(t.bytes, flows), 1), kMaxChunkBytes));
  t.chunks = t.bytes == 0 ? 0 : static_cast<uint32_t>(ceil_div(t.bytes, t.chunk_bytes));
}

}  // namespace

void CollectiveEngine::steady_state(Plan& plan) const {
  auto& phases = plan.phases;
  switch (plan.choice.algorithm) {
    case CollectiveAlgorithm::Ring:
    case CollectiveAlgorithm::Hierarchical:
    case CollectiveAlgorithm::Direct:
    case CollectiveAlgorithm::HalvingDoubling:
      break;
    case CollectiveAlgorithm::NvlsTree:
      steady_nvls_tree(plan);
      return;
    case CollectiveAlgorithm::Tree:
      steady_tree(plan);
      return;
    default:
      return;  // in-switch schedules keep their phases
  }
  // One phase that stands for one step has nothing to merge (a broadcast's chain); a ring's
  // phase per ring stands for all its steps (ring_schedule) and is merged below as the phases
  // of its steps would be.
  const bool whole_rings = plan.choice.algorithm == CollectiveAlgorithm::Ring && !phases.empty() &&
                           !phases[0].sends.empty() && phases[0].sends[0].steps > 1;
  if (phases.size() < 2 && !whole_rings) return;
  Phase merged;
  for (const Phase& ph : phases) {
    for (const Transfer& t : ph.sends) merge_transfer(merged.sends, t);
    for (const Transfer& t : ph.receives) merge_transfer(merged.receives, t);
  }
  // A ring's chain of steps moves into the next node only every g steps (Tuner::network_steps):
  // its transfer to a member of another node stands for those steps, its transfer inside the
  // node for the others (else the flow to the next node would wait for every step's network
  // latency). Hierarchical: a transfer across nodes stands for all the steps across nodes (the
  // levels up and down the double binary tree where the outermost dimension runs one).
  // The tree's edges join nodes under different leaf switches, where one flow per edge would
  // take one path through the spines and meet other edges' flows there. NCCL's channels each
  // have their own connection and packet fidelity's chunks take the uplinks in turn, so each
  // of the tree's transfers across nodes is one flow per channel, sent together.
  const CollectiveAlgorithm algorithm = plan.choice.algorithm;
  const CommunicatorShape& shape = communicators_->shape(plan.communicator);
  const bool ring = algorithm == CollectiveAlgorithm::Ring;
  const int network = ring || algorithm == CollectiveAlgorithm::Hierarchical
                          ? Tuner::network_steps(plan.kind, algorithm, shape)
                          : 0;
  const bool tree = algorithm == CollectiveAlgorithm::Hierarchical && Tuner::tree_across_nodes(plan.kind, shape);
  if (tree) merged.together = static_cast<uint32_t>(std::max(1, plan.choice.channels));
  for (auto* list : {&merged.sends, &merged.receives})
    for (Transfer& t : *list) {
      const bool across = t.peer >= 0 && on_another_node(t.peer);
      t.moving_steps = t.steps;  // its latency may stand for fewer (below); its channels wait in each
      if (ring && network > 0 && uint32_t(network) < t.steps)
        t.steps = across ? uint32_t(network) : t.steps - uint32_t(network);
      else if (!ring && network > 0 && across)
        t.steps = uint32_t(network);
      cut_into_flows(t, tree && across ? merged.together : 1);
    }
  phases.assign(1, std::move(merged));
}

// The double binary tree in its steady state: NCCL pipelines each channel's tree in chunks of a
// few hundred KiB, so once its pipeline is full every edge carries its chunks at once, up and
// down both trees. Each transfer is its body, which leaves at the launch (the steady state, one
// flow), and its tail, packet fidelity's chunk of a step, which waits for every chunk of the
// phase that gates it, as the last chunk does in packet fidelity: the tails climb and come down
// the chain level by level (the pipeline's drain), so no member is done before the root has every
// member's data, and an edge that runs late holds back every member below it. Before, flow
// fidelity sent each transfer as 16 chunks in turn, gated level by level: a fill of the chain's
// levels in 16ths of the call, where packet fidelity's chunks are a few hundred KiB.
void CollectiveEngine::steady_tree(Plan& plan) const {
  for (Phase& ph : plan.phases) {
    ph.tail_waits = true;
    for (auto* list : {&ph.sends, &ph.receives})
      for (Transfer& t : *list) {
        const uint64_t tail = std::max<uint32_t>(1, t.step_chunk_bytes);
        if (t.bytes <= tail) {  // the tail alone
          t.chunk_bytes = static_cast<uint32_t>(std::max<uint64_t>(1, t.bytes));
          t.chunks = t.bytes == 0 ? 0 : 1;
        } else {
          // The body in as few equal chunks as a chunk's 32 bits allow (one below 4 GiB); the
          // rest, at most the tail (rounding takes less than a byte a chunk from it), last.
          const uint64_t body = t.bytes - tail;
          const uint64_t pieces = ceil_div(body, kMaxChunkBytes);
          t.chunk_bytes = static_cast<uint32_t>(ceil_div(body, pieces));
          t.chunks = static_cast<uint32_t>(ceil_div(t.bytes, t.chunk_bytes));
        }
        ph.together = std::max(ph.together, t.chunks);  // every chunk in flight at once
      }
  }
}

// NVLS-tree in its steady state: once its pipeline is full the switches reduce, the tree moves
// shards up and down across the nodes and the switches multicast, all at once, so flow
// fidelity starts the three together (each transfer at most 16 flows) and lets them share the
// NVLinks and NICs. The tree's phases merge into one, as a hierarchical schedule's across nodes:
// a transfer across nodes stands for the tree's 2 depth(N) levels (each the path's latency,
// the step latency and packet fidelity's chunk stored and forwarded on every link), one flow per
// channel, all sent together.
void CollectiveEngine::steady_nvls_tree(Plan& plan) const {
  auto& phases = plan.phases;
  Phase tree;
  tree.together = static_cast<uint32_t>(std::max(1, plan.choice.channels));
  std::vector<Phase> in_switch;
  for (Phase& ph : phases) {
    if (ph.purpose != TransferPurpose::Collective) {
      in_switch.push_back(std::move(ph));
      in_switch.back().after = in_switch.back().also_after = -1;
      continue;
    }
    for (const Transfer& t : ph.sends) merge_transfer(tree.sends, t);
    for (const Transfer& t : ph.receives) merge_transfer(tree.receives, t);
  }
  if (in_switch.size() != 2) throw std::logic_error(std::string(name()) + ": an NVLS-tree without its two in-switch phases");
  const uint32_t levels =
      uint32_t(Tuner::network_steps(plan.kind, CollectiveAlgorithm::NvlsTree, communicators_->shape(plan.communicator)));
  for (auto* list : {&tree.sends, &tree.receives})
    for (Transfer& t : *list) {
      t.moving_steps = t.steps;
      t.steps = std::max(1u, levels);
      cut_into_flows(t, tree.together);
    }
  // The pipeline's fill: the first chunk is reduced in the switch, goes up and down the tree
  // and is multicast before the last leaves, so each multicast window stands for that chain,
  // a step each (its latency, its handshake and the chunk stored and forwarded on its path).
  for (auto* list : {&in_switch[1].sends, &in_switch[1].receives})
    for (Transfer& t : *list) t.steps = levels + 2;
  phases.clear();
  phases.push_back(std::move(in_switch[0]));
  phases.push_back(std::move(tree));
  phases.push_back(std::move(in_switch[1]));
}

CollectiveEngine::NodeGroups& CollectiveEngine::node_groups(int communicator) {
  auto found = node_groups_.find(communicator);
  if (found != node_groups_.end()) return found->second;
  const auto& ranks = job_.communicators[communicator].ranks;
  const int g = config_.gpus_per_node;
  auto node_of = [&](int r) { return g > 0 ? r / g : 0; };
  NodeGroups& groups = node_groups_[communicator];
  for (int r : ranks)
    if (node_of(r) == node_of(rank_)) groups.node.push_back(r);
  const size_t local = std::find(groups.node.begin(), groups.node.end(), rank_) - groups.node.begin();
  // The member at the same place in every node, nodes in communicator order.
  std::unordered_map<int, size_t> seen;  // members met so far, by node
  for (int r : ranks)
    if (seen[node_of(r)]++ == local) groups.across.push_back(r);
  return groups;
}

void CollectiveEngine::count_injected(const protocol::FabricTransfer& t) {
  bytes_injected_ += t.bytes;
  if (in_node(t, t.destination)) bytes_injected_in_node_ += t.bytes;
}

// A transfer between GPUs of this node (not through the network's switches).
bool CollectiveEngine::in_node(const protocol::FabricTransfer& t, uint32_t peer) const {
  const bool network = t.purpose == TransferPurpose::NetworkReduce || t.purpose == TransferPurpose::NetworkMulticast;
  return !network && !on_another_node(int(peer));
}

bool CollectiveEngine::on_another_node(int peer) const {
  const int node_size = config_.fabric.gpus_per_node;
  return node_size > 0 && peer / node_size != rank_ / node_size;
}

uint32_t CollectiveEngine::call_number(const protocol::CollectiveEvent& e) {
  if (e.call != protocol::CollectiveEvent::kUnnumbered) return e.call;
  return calls_[membership(e.communicator)].started++;
}

bool CollectiveEngine::joined(int communicator, uint32_t call) const {
  return call < joined(communicator) || joined_ahead_.count(key(uint64_t(communicator), call)) > 0;
}

void CollectiveEngine::start_collective(tlm::tlm_generic_payload& call) {
  protocol::CollectiveEvent& e = protocol::collective_event(call);
  const uint32_t sequence = call_number(e);
  // Calls 0 .. joined_ - 1 have started; the others that have, out of order, wait aside.
  const size_t m = membership(e.communicator);
  uint32_t& below = calls_[m].joined;
  if (sequence > below && m < late_.size() && late_[m]) {
    below = sequence;
    late_[m] = false;
  }
  if (sequence == below) {
    ++below;
    while (!joined_ahead_.empty() && joined_ahead_.erase(key(uint64_t(e.communicator), below)) > 0) ++below;
  } else {
    joined_ahead_.insert(key(uint64_t(e.communicator), sequence));
  }
  const uint64_t flow = key(uint64_t(e.communicator), sequence);
  e.flow = flow;
  Instance& inst = instance(flow);
  inst.sequence = sequence;
  plan(inst, e);
  inst.call = &call;  // (joined: its plan is set)
  // Chunks that arrived before this rank joined.
  std::vector<uint64_t> early;
  early.swap(inst.early);
  for (uint64_t packed : early) received(flow, inst, static_cast<uint32_t>(packed >> 32));
  // The call's launch, and what a ring takes beyond its lossless pipeline (Tuner::ring_fill).
  const double launch_s =
      config_.protocol_latencies
          ? tuner_.cost(inst.plan->choice.algorithm, inst.plan->choice.protocol).launch_us * 1e-6 +
                tuner_.ring_fill(e.kind, inst.plan->choice.algorithm, inst.plan->choice.protocol, e.bytes, communicators_->shape(e.communicator))
          : 0.0;
  if (launch_s > 0) latencies_.notify(*this, call, LAUNCH, sc_time(launch_s, sc_core::SC_SEC));
  else launch(flow);
}

void CollectiveEngine::launch(uint64_t flow) {
  Instance& inst = instance(flow);
  inst.launched = true;
  add_sms(inst.plan->choice.channels);
  for (size_t k = 0; k < inst.plan->phases.size(); ++k) pump(flow, inst, k);
  check_done(flow, inst);
}

void CollectiveEngine::pump(uint64_t flow, Instance& inst, size_t k) {
  if (!inst.launched) return;
  const Phase& ph = inst.plan->phases[k];
  Progress& done = inst.progress(k);
  // Chunk j may leave once each gating phase has received its share (j+1)/chunks.
  auto waits_for = [&](int gate, uint32_t j) {
    if (gate < 0) return false;
    const Phase& g = inst.plan->phases[size_t(gate)];
    const uint64_t received = inst.progress(size_t(gate)).received;
    if (ph.tail_waits)  // chunk j is some transfer's tail
      return received < g.receive_chunks &&
             std::any_of(ph.sends.begin(), ph.sends.end(), [j](const Transfer& t) { return j + 1 == t.chunks; });
    return g.receive_chunks > 0 && received < ceil_div(uint64_t(j + 1) * g.receive_chunks, ph.send_chunks);
  };
  // Flow fidelity sends a connection's chunks one after the other: flows in flight together
  // would share the link fairly and all finish late, where a port sends them in order (unless
  // the phase spreads a transfer over several paths: Phase::together).
  const uint32_t per_connection = config_.steady_state ? ph.together : std::max(1u, config_.slots);
  const uint64_t slots = uint64_t(per_connection) * ph.sends.size();
  while (done.next < ph.send_chunks && done.in_flight < slots) {
    if (waits_for(ph.after, done.next) || waits_for(ph.also_after, done.next)) return;
    // Claim chunk j first: injecting may re-enter pump() (a chunk that leaves at once frees
    // its slot from inside send_chunk).
    const uint32_t j = done.next++;
    for (const Transfer& t : ph.sends)
      if (j < t.chunks) ++done.in_flight;
    for (const Transfer& t : ph.sends)
      if (j < t.chunks) send_chunk(flow, inst, ph, static_cast<uint32_t>(k), t, j);
  }
}

void CollectiveEngine::send_chunk(uint64_t flow, Instance& inst, const Phase& phase,
                                  uint32_t step, const Transfer& to, uint32_t chunk) {
  tlm::tlm_generic_payload* gp = pool_.acquire();
  protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
  t.source = static_cast<uint32_t>(rank_);
  t.destination = static_cast<uint32_t>(to.peer);
  t.bytes = std::min<uint64_t>(to.chunk_bytes, to.bytes - uint64_t(chunk) * to.chunk_bytes);
  t.flow = flow;
  t.step = step;
  t.chunk = chunk;
  const uint32_t call_channels = uint32_t(std::max(1, inst.plan->choice.channels));
  t.channel = static_cast<uint16_t>(
      (to.channels > 0 ? to.first_channel + uint32_t(to.stride) * (chunk % to.channels) : chunk) % call_channels);
  t.steps = static_cast<uint16_t>(std::min<uint32_t>(to.steps, 0xffff));
  // (The step latency the receiver will charge: the network's when the peer is on another node.)
  const bool network = phase.network || (to.peer >= 0 && on_another_node(to.peer));
  t.step_latency = (network ? inst.plan->network_step_delay : inst.plan->step_delay).value();
  t.step_chunk_bytes = to.step_chunk_bytes;
  t.purpose = phase.purpose;
  t.wire_factor = phase.wire_factor;
  const bool tail = phase.tail_waits && chunk + 1 == to.chunks;
  t.rate_cap = tail ? to.tail_rate_cap : to.rate_cap;
  t.stored_and_forwarded = tail;
  if (tail) t.step_chunk_bytes = std::min<uint64_t>(t.step_chunk_bytes, t.bytes);
  t.members = phase.members;
  t.member_count = phase.member_count;
  t.tree = phase.tree;
  t.echo = inst.plan->echo;
  if (inst.plan->echo) {  // the ring, for the fabric's images of this transfer
    const std::vector<int>& ring = job_.communicators[size_t(inst.plan->communicator)].ranks;
    t.members = ring.data();
    t.member_count = static_cast<uint32_t>(ring.size());
  }
  gp->set_data_length(static_cast<unsigned>(std::min<uint64_t>(t.bytes, 0xffffffffu)));
  count_injected(t);
  // (A point-to-point channel's rate is its NVLink writes: a peer across the network is the
  // proxy's and its NIC's, not the SM's.)
  if (inst.plan->channel_rate > 0 && t.channel < inst.channel_free.size() && !(inst.plan->point_to_point && network)) {
    // The channel's SM takes the chunk when it is done with its previous one, and is busy
    // for the chunk's bytes at its rate plus the step's handshake (it waits for the step's
    // flags before it moves data: NCCL's per-step latency is not hidden behind the data).
    double& free = inst.channel_free[t.channel];
    const double now = sc_core::sc_time_stamp().to_seconds();
    const double start = std::max(now, free);
    const double handshake = chunk < to.lanes(inst.plan->choice.channels) ? inst.plan->channel_handshake_s : 0.0;
    free = start + double(t.bytes) / inst.plan->channel_rate + handshake;
    if (start > now) {
      latencies_.notify(*this, *gp, INJECT, sc_time(start - now, sc_core::SC_SEC));
      return;
    }
  }
  fabric_->inject(*gp, *this);
}

void CollectiveEngine::received(uint64_t flow, Instance& inst, uint32_t step) {
  if (step >= inst.plan->phases.size())
    throw std::runtime_error(std::string(name()) + ": chunk of step " + std::to_string(step) +
                             " for a schedule of " + std::to_string(inst.plan->phases.size()) +
                             " steps (members disagree on the algorithm)");
  ++inst.progress(step).received;
  ++inst.recvs_done;
  const std::vector<uint32_t>& gates = inst.plan->gates;
  for (uint32_t i = gates[step]; i < gates[step + 1]; ++i) pump(flow, inst, gates[i]);
  check_done(flow, inst);
}

void CollectiveEngine::check_done(uint64_t flow, Instance& inst) {
  if (inst.finishing || inst.call == nullptr || !inst.launched) return;
  if (inst.sends_done < inst.plan->sends_expected || inst.recvs_done < inst.plan->recvs_expected) return;
  inst.finishing = true;
  add_sms(-inst.plan->choice.channels);
  finished_flows_.push_back(flow);
  if (inst.plan->drain_s > 0)
    latencies_.notify(*this, *inst.call, DRAINED, sc_time(inst.plan->drain_s, sc_core::SC_SEC));
  else
    finish(inst.call);
}

void CollectiveEngine::add_sms(int delta) {
  sms_in_use_ += delta;
  if (sm_observer_ != nullptr) sm_observer_->collective_sms_changed(sms_in_use_);
}

CollectiveEngine::Instance& CollectiveEngine::instance(uint64_t flow) {
  if (flow != last_flow_ || last_instance_ == nullptr) {
    last_instance_ = &instances_[flow];
    last_flow_ = flow;
  }
  return *last_instance_;
}

void CollectiveEngine::forget(uint64_t flow) {
  if (flow == last_flow_) last_instance_ = nullptr;
  instances_.erase(flow);
}

void CollectiveEngine::finish(tlm::tlm_generic_payload* call) {
  // Completion is delivered in the next delta cycle, never from inside a fabric callback.
  latencies_.notify(*this, *call, FINISHED, sc_core::SC_ZERO_TIME);
}

void CollectiveEngine::deliver_finished(tlm::tlm_generic_payload& call) {
  for (uint64_t flow : finished_flows_) {
    if (flow >> 63) sends_.erase(flow & ~(uint64_t(1) << 63));
    else forget(flow);
  }
  finished_flows_.clear();
  // (A completion may finish more calls: they are delivered in the next delta.)
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_bw(call, phase, delay);
}

void CollectiveEngine::start_send(tlm::tlm_generic_payload& call) {
  const protocol::CollectiveEvent& e = protocol::collective_event(call);
  const uint64_t flow = key(uint64_t(e.peer), e.tag);
  // Steady state: the message is one flow.
  const uint64_t chunk_bytes = config_.steady_state ? kMaxChunkBytes : config_.chunk_bytes;
  const uint64_t chunks = ceil_div(e.bytes, chunk_bytes);
  const P2pPlan plan = tuner_.p2p_plan(e.bytes, job_.p2p_ranks, on_another_node(e.peer));
  // Packet fidelity: chunk j on channel j mod channels, each channel's chunks one after another
  // at its rate (flow fidelity: the message's one flow at the channels' rate).
  const double chunk_s = plan.rate > 0 ? double(chunk_bytes) * plan.channels / plan.rate : 0.0;
  Send& send = sends_[flow];  // (no reference kept past here: an injection may start another)
  send.call = &call;
  send.expected = chunks;
  for (uint32_t j = 0; j < chunks; ++j) {
    tlm::tlm_generic_payload* gp = pool_.acquire();
    protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
    t.source = static_cast<uint32_t>(rank_);
    t.destination = static_cast<uint32_t>(e.peer);
    t.bytes = std::min<uint64_t>(chunk_bytes, e.bytes - uint64_t(j) * chunk_bytes);
    t.flow = flow;  // (destination, tag) on this side; the receiver keys by (source, tag)
    t.step = e.tag;
    t.chunk = j;
    t.channel = static_cast<uint16_t>(j);  // spread over the GPU's port groups
    t.steps = 1;
    t.step_latency = 0;
    t.step_chunk_bytes = 0;
    t.stored_and_forwarded = false;
    t.purpose = TransferPurpose::PointToPoint;
    t.wire_factor = 1.0f;
    t.rate_cap = plan.rate;
    t.members = nullptr;
    t.member_count = 0;
    t.echo = false;
    count_injected(t);
    const double start = double(j / uint32_t(plan.channels)) * chunk_s;
    if (start > 0) {
      latencies_.notify(*this, *gp, INJECT, sc_time(start, sc_core::SC_SEC));
      continue;
    }
    fabric_->inject(*gp, *this);
  }
}

void CollectiveEngine::start_receive(tlm::tlm_generic_payload& call) {
  const protocol::CollectiveEvent& e = protocol::collective_event(call);
  const uint64_t k = key(uint64_t(e.peer), e.tag);
  PointToPoint& p2p = receives_[k];
  p2p.receives.push_back(&call);
  match_receives(k, p2p);
}

void CollectiveEngine::match_receives(uint64_t k, PointToPoint& p2p) {
  while (!p2p.receives.empty()) {
    tlm::tlm_generic_payload* call = p2p.receives.front();
    const uint64_t need = protocol::collective_event(*call).bytes;
    if (p2p.available < need) return;
    p2p.available -= need;
    p2p.receives.erase(p2p.receives.begin());
    // The receiver copies the last chunk out of its buffer before the receive completes.
    const protocol::CollectiveEvent& e = protocol::collective_event(*call);
    const double drain_s = tuner_.p2p_plan(e.bytes, job_.p2p_ranks, on_another_node(e.peer)).drain_s;
    if (drain_s > 0)
      latencies_.notify(*this, *call, DRAINED, sc_time(drain_s, sc_core::SC_SEC));
    else
      finish(call);
  }
  if (p2p.available == 0) receives_.erase(k);  // (a message's tag: most are used once)
}

void CollectiveEngine::check_receiver(tlm::tlm_generic_payload& gp) const {
  const uint32_t receiver = protocol::fabric_transfer(gp).receiver();
  if (receiver != static_cast<uint32_t>(rank_))
    throw std::runtime_error(std::string(name()) + ": received a chunk for GPU " + std::to_string(receiver));
}

void CollectiveEngine::flow_arrived(uint32_t, tlm::tlm_generic_payload& gp) {
  check_receiver(gp);
  // This engine releases the sender's reference; the flow fabric then releases its own.
  chunk_arrived(gp);
}

void CollectiveEngine::chunk_arrived(tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  bytes_received_ += t.bytes;
  if (in_node(t, t.source)) bytes_received_in_node_ += t.bytes;
  if (t.purpose == TransferPurpose::PointToPoint) {
    const uint64_t k = key(t.source, t.step);
    PointToPoint& p2p = receives_[k];
    p2p.available += t.bytes;
    gp.release();
    match_receives(k, p2p);
    return;
  }
  Instance& inst = instance(t.flow);
  if (inst.call == nullptr) {
    inst.early.push_back(key(t.step, t.chunk));  // this rank has not joined yet
    gp.release();
    return;
  }
  // A chunk from another of the platform's nodes (or the network's sum) paid the network's
  // step latency.
  const bool network = (t.step < inst.plan->phases.size() && inst.plan->phases[t.step].network) ||
                       on_another_node(static_cast<int>(t.source));
  const sc_time& delay = network ? inst.plan->network_step_delay : inst.plan->step_delay;
  if (delay != sc_core::SC_ZERO_TIME) {
    latencies_.notify(*this, gp, protocol::ARRIVED, delay);  // the step's handshake latency
    return;
  }
  const uint64_t flow = t.flow;
  const uint32_t step = t.step;
  gp.release();
  received(flow, inst, step);
}

void CollectiveEngine::delayed(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
  if (phase == LAUNCH) {
    launch(protocol::collective_event(gp).flow);
    return;
  }
  if (phase == INJECT) {
    fabric_->inject(gp, *this);
    return;
  }
  if (phase == DRAINED) {
    finish(&gp);
    return;
  }
  if (phase == FINISHED) {
    deliver_finished(gp);
    return;
  }
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  const uint64_t flow = t.flow;
  const uint32_t step = t.step;
  gp.release();
  received(flow, instance(flow), step);
}

void CollectiveEngine::packet_left(tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.purpose == TransferPurpose::PointToPoint) {
    Send& send = sends_[t.flow];
    if (++send.done == send.expected) {  // (once: each chunk leaves once)
      finished_flows_.push_back(t.flow | (uint64_t(1) << 63));
      finish(send.call);
    }
    return;
  }
  const uint64_t flow = t.flow;
  Instance& inst = instance(flow);
  ++inst.sends_done;
  --inst.progress(t.step).in_flight;
  pump(flow, inst, t.step);
  check_done(flow, inst);
}

std::vector<CollectiveEngine::Waiting> CollectiveEngine::waiting() const {
  std::vector<Waiting> out;
  for (const auto& [flow, inst] : instances_) {
    if (inst.call == nullptr || inst.finishing) continue;
    Waiting w;
    w.op = static_cast<uint32_t>(inst.call->get_address());
    w.communicator = inst.plan->communicator;
    w.sequence = inst.sequence;
    w.what = std::string(op_name(inst.plan->kind)) + " (" + algorithm_name(inst.plan->choice.algorithm) +
             ") on communicator " + job_.communicators[inst.plan->communicator].name + " (call " +
             std::to_string(inst.sequence) + "), " +
             std::to_string(inst.plan->recvs_expected - inst.recvs_done) + " of " +
             std::to_string(inst.plan->recvs_expected) + " chunks not received";
    out.push_back(w);
  }
  for (const auto& [k, p2p] : receives_) {
    for (tlm::tlm_generic_payload* call : p2p.receives) {
      const protocol::CollectiveEvent& e = protocol::collective_event(*call);
      Waiting w;
      w.op = static_cast<uint32_t>(call->get_address());
      w.peer = e.peer;
      w.what = "recv from rank " + std::to_string(e.peer) + " (tag " + std::to_string(e.tag) +
               "), " + std::to_string(e.bytes - std::min(e.bytes, p2p.available)) +
               " bytes not received";
      out.push_back(w);
    }
  }
  std::sort(out.begin(), out.end(), [](const Waiting& a, const Waiting& b) { return a.op < b.op; });
  return out;
}

}  // namespace tessera::models
