#include "models/collectives/collective_engine.h"

#include <algorithm>

namespace tessera::models {

using protocol::CollectiveOp;
using sc_core::sc_time;

namespace {
constexpr uint64_t key(uint64_t high, uint64_t low) { return (high << 32) | (low & 0xffffffffu); }
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
const char* op_name(CollectiveOp kind) {
  switch (kind) {
    case CollectiveOp::AllReduce: return "allreduce";
    case CollectiveOp::ReduceScatter: return "reducescatter";
    case CollectiveOp::AllGather: return "allgather";
    case CollectiveOp::AllToAll: return "alltoall";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Barrier: return "barrier";
    case CollectiveOp::Send: return "send";
    case CollectiveOp::Recv: return "recv";
  }
  return "?";
}
}  // namespace

CollectiveEngine::CollectiveEngine(sc_core::sc_module_name name, int rank,
                                   const workloads::Job& job, protocol::PayloadPool& pool,
                                   FabricInjector& fabric, const CollectiveEngineConfig& config)
    : sc_module(name), socket("socket"), rank_(rank), job_(job), pool_(pool), fabric_(fabric),
      config_(config), joined_(job.communicators.size(), 0),
      position_(job.communicators.size(), -1), finished_event_("finished") {
  socket.register_nb_transport_fw(this, &CollectiveEngine::nb_transport_fw);
  for (size_t c = 0; c < job.communicators.size(); ++c) {
    const auto& ranks = job.communicators[c].ranks;
    auto it = std::find(ranks.begin(), ranks.end(), rank);
    if (it != ranks.end()) position_[c] = static_cast<int>(it - ranks.begin());
  }
  protocol::spawn_method("complete", &finished_event_, [this] { deliver_finished(); });
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

uint64_t CollectiveEngine::chunk_size(uint64_t segment, uint32_t chunk) const {
  const uint64_t offset = uint64_t(chunk) * config_.chunk_bytes;
  return std::min<uint64_t>(config_.chunk_bytes, segment - offset);
}

void CollectiveEngine::plan(Instance& inst, const protocol::CollectiveEvent& e) {
  const auto& ranks = job_.communicators[e.communicator].ranks;
  const uint64_t n = ranks.size();
  const int p = position_[e.communicator];
  inst.kind = e.kind;
  inst.next = ranks[(p + 1) % n];
  const uint64_t bytes = std::max<uint64_t>(e.bytes, e.kind == CollectiveOp::Barrier ? n : 1);
  if (n == 1) return;  // nothing to exchange
  switch (e.kind) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::Barrier:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: {
      const bool reduce_and_gather = e.kind == CollectiveOp::AllReduce || e.kind == CollectiveOp::Barrier;
      inst.steps = static_cast<uint32_t>(reduce_and_gather ? 2 * (n - 1) : n - 1);
      inst.segment = ceil_div(bytes, n);
      inst.chunks = static_cast<uint32_t>(ceil_div(inst.segment, config_.chunk_bytes));
      inst.sends_expected = inst.recvs_expected = uint64_t(inst.steps) * inst.chunks;
      break;
    }
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: {
      // A chain along the ring: broadcast starts at the root (position 0), reduce ends there.
      const uint64_t q = e.kind == CollectiveOp::Broadcast ? uint64_t(p) : (p + n - 1) % n;
      inst.steps = static_cast<uint32_t>(n - 1);
      inst.segment = bytes;
      inst.chunks = static_cast<uint32_t>(ceil_div(bytes, config_.chunk_bytes));
      inst.sends_expected = q + 1 < n ? inst.chunks : 0;
      inst.recvs_expected = q > 0 ? inst.chunks : 0;
      break;
    }
    case CollectiveOp::AllToAll: {
      inst.steps = 0;  // nothing is forwarded
      inst.segment = ceil_div(bytes, n);
      inst.chunks = static_cast<uint32_t>(ceil_div(inst.segment, config_.chunk_bytes));
      inst.sends_expected = inst.recvs_expected = (n - 1) * inst.chunks;
      break;
    }
    case CollectiveOp::Send:
    case CollectiveOp::Recv: break;
  }
}

void CollectiveEngine::start_collective(tlm::tlm_generic_payload& call) {
  const protocol::CollectiveEvent& e = protocol::collective_event(call);
  const uint32_t sequence = joined_[e.communicator]++;
  const uint64_t flow = key(uint64_t(e.communicator), sequence);
  Instance& inst = instances_[flow];
  inst.call = &call;
  inst.communicator = e.communicator;
  inst.sequence = sequence;
  plan(inst, e);

  // Initial sends: ring collectives send step 0; the chain's first rank sends; all-to-all
  // sends every segment, interleaved over the peers.
  const auto& ranks = job_.communicators[e.communicator].ranks;
  const size_t n = ranks.size();
  const int p = position_[e.communicator];
  if (inst.kind == CollectiveOp::AllToAll) {
    for (uint32_t j = 0; j < inst.chunks; ++j)
      for (size_t k = 1; k < n; ++k) send_chunk(flow, inst, ranks[(p + k) % n], 0, j);
  } else {
    const bool chain = inst.kind == CollectiveOp::Broadcast || inst.kind == CollectiveOp::Reduce;
    if (inst.sends_expected > 0 && (!chain || inst.recvs_expected == 0))
      for (uint32_t j = 0; j < inst.chunks; ++j) send_chunk(flow, inst, inst.next, 0, j);
  }
  // Chunks that arrived before this rank joined.
  std::vector<uint64_t> early;
  early.swap(inst.early);
  for (uint64_t packed : early)
    received(flow, inst, static_cast<uint32_t>(packed >> 32), static_cast<uint32_t>(packed));
  check_done(flow, inst);
}

void CollectiveEngine::send_chunk(uint64_t flow, const Instance& inst, int destination,
                                  uint32_t step, uint32_t chunk) {
  tlm::tlm_generic_payload* gp = pool_.acquire();
  protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
  t.source = static_cast<uint32_t>(rank_);
  t.destination = static_cast<uint32_t>(destination);
  t.bytes = chunk_size(inst.segment, chunk);
  t.flow = flow;
  t.step = step;
  t.chunk = chunk;
  t.purpose = protocol::TransferPurpose::Collective;
  gp->set_data_length(static_cast<unsigned>(std::min<uint64_t>(t.bytes, 0xffffffffu)));
  bytes_injected_ += t.bytes;
  fabric_.inject(*gp, *this);
}

void CollectiveEngine::received(uint64_t flow, Instance& inst, uint32_t step, uint32_t chunk) {
  ++inst.recvs_done;
  if (step + 1 < inst.steps) send_chunk(flow, inst, inst.next, step + 1, chunk);
  check_done(flow, inst);
}

void CollectiveEngine::check_done(uint64_t flow, Instance& inst) {
  if (inst.finishing || inst.call == nullptr) return;
  if (inst.sends_done < inst.sends_expected || inst.recvs_done < inst.recvs_expected) return;
  inst.finishing = true;
  finished_flows_.push_back(flow);
  finish(inst.call);
}

void CollectiveEngine::finish(tlm::tlm_generic_payload* call) {
  // Completion is delivered in the next delta cycle, never from inside a fabric callback.
  finished_.push_back(call);
  finished_event_.notify(sc_core::SC_ZERO_TIME);
}

void CollectiveEngine::deliver_finished() {
  for (uint64_t flow : finished_flows_) {
    if (flow >> 63) sends_.erase(flow & ~(uint64_t(1) << 63));
    else instances_.erase(flow);
  }
  finished_flows_.clear();
  std::vector<tlm::tlm_generic_payload*> calls;
  calls.swap(finished_);
  for (tlm::tlm_generic_payload* call : calls) {
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_time delay = sc_core::SC_ZERO_TIME;
    socket->nb_transport_bw(*call, phase, delay);
  }
}

void CollectiveEngine::start_send(tlm::tlm_generic_payload& call) {
  const protocol::CollectiveEvent& e = protocol::collective_event(call);
  const uint64_t flow = key(uint64_t(e.peer), e.tag);
  Instance& inst = sends_[flow];
  inst.call = &call;
  inst.kind = CollectiveOp::Send;
  inst.next = e.peer;
  inst.segment = e.bytes;
  inst.chunks = static_cast<uint32_t>(ceil_div(e.bytes, config_.chunk_bytes));
  inst.sends_expected = inst.chunks;
  for (uint32_t j = 0; j < inst.chunks; ++j) {
    tlm::tlm_generic_payload* gp = pool_.acquire();
    protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
    t.source = static_cast<uint32_t>(rank_);
    t.destination = static_cast<uint32_t>(e.peer);
    t.bytes = chunk_size(e.bytes, j);
    t.flow = flow;  // (destination, tag) on this side; the receiver keys by (source, tag)
    t.step = e.tag;
    t.chunk = j;
    t.purpose = protocol::TransferPurpose::PointToPoint;
    bytes_injected_ += t.bytes;
    fabric_.inject(*gp, *this);
  }
}

void CollectiveEngine::start_receive(tlm::tlm_generic_payload& call) {
  const protocol::CollectiveEvent& e = protocol::collective_event(call);
  PointToPoint& p2p = receives_[key(uint64_t(e.peer), e.tag)];
  p2p.receives.push_back(&call);
  match_receives(p2p);
}

void CollectiveEngine::match_receives(PointToPoint& p2p) {
  while (!p2p.receives.empty()) {
    tlm::tlm_generic_payload* call = p2p.receives.front();
    const uint64_t need = protocol::collective_event(*call).bytes;
    if (p2p.available < need) return;
    p2p.available -= need;
    p2p.receives.erase(p2p.receives.begin());
    finish(call);
  }
}

void CollectiveEngine::chunk_arrived(tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer t = protocol::fabric_transfer(gp);
  gp.release();
  bytes_received_ += t.bytes;
  if (t.purpose == protocol::TransferPurpose::PointToPoint) {
    PointToPoint& p2p = receives_[key(t.source, t.step)];
    p2p.available += t.bytes;
    match_receives(p2p);
    return;
  }
  Instance& inst = instances_[t.flow];
  if (inst.call == nullptr) {
    inst.early.push_back(key(t.step, t.chunk));  // this rank has not joined yet
    return;
  }
  received(t.flow, inst, t.step, t.chunk);
}

void CollectiveEngine::packet_left(tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.purpose == protocol::TransferPurpose::PointToPoint) {
    Instance& inst = sends_[t.flow];
    ++inst.sends_done;
    if (!inst.finishing && inst.sends_done == inst.sends_expected) {
      inst.finishing = true;
      finished_flows_.push_back(t.flow | (uint64_t(1) << 63));
      finish(inst.call);
    }
    return;
  }
  Instance& inst = instances_[t.flow];
  ++inst.sends_done;
  check_done(t.flow, inst);
}

std::vector<CollectiveEngine::Waiting> CollectiveEngine::waiting() const {
  std::vector<Waiting> out;
  for (const auto& [flow, inst] : instances_) {
    if (inst.call == nullptr || inst.finishing) continue;
    Waiting w;
    w.op = static_cast<uint32_t>(inst.call->get_address());
    w.communicator = inst.communicator;
    w.sequence = inst.sequence;
    w.what = std::string(op_name(inst.kind)) + " on communicator " +
             job_.communicators[inst.communicator].name + " (call " +
             std::to_string(inst.sequence) + "), " +
             std::to_string(inst.recvs_expected - inst.recvs_done) + " of " +
             std::to_string(inst.recvs_expected) + " chunks not received";
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
