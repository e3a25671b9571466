// A command processor's following (CommandProcessor::follow) and parting (CommandProcessor::part):
// the replay of a representative's communication, and the way back to running the GPU's own
// program where the replay no longer holds (docs/fidelity.md, "Symmetry" and "Parting").
#include <algorithm>

#include "models/gpu/command_processor.h"
#include "models/gpu/time_causes.h"
#include "tlm/extensions.h"

namespace tessera::models {

using sc_core::sc_time;
using workloads::OpKind;

void CommandProcessor::leave_out(std::vector<bool> communicator_slots, std::vector<bool> peer_slots) {
  quiet_communicators_ = std::move(communicator_slots);
  quiet_peers_ = std::move(peer_slots);
}

void CommandProcessor::leave_out_also(const std::vector<bool>& communicator_slots, const std::vector<bool>& peer_slots) {
  auto add = [](std::vector<bool>& to, const std::vector<bool>& from) {
    if (to.size() < from.size()) to.resize(from.size(), false);
    for (size_t i = 0; i < from.size(); ++i) to[i] = to[i] || from[i];
  };
  add(quiet_communicators_, communicator_slots);
  add(quiet_peers_, peer_slots);
}

void CommandProcessor::leave_out_echoed(std::shared_ptr<const std::vector<bool>> ops) { echoed_ = std::move(ops); }

bool CommandProcessor::replays(uint32_t index) const {
  if (echoed_ && (*echoed_)[index]) return false;
  const workloads::Op& op = rank_->program->ops[index];
  const std::vector<bool>& quiet = op.kind == OpKind::Collective ? quiet_communicators_ : quiet_peers_;
  return size_t(op.slot) >= quiet.size() || !quiet[size_t(op.slot)];
}

void CommandProcessor::follow(CommandProcessor& representative, SymmetryMonitor& monitor) {
  leader_ = &representative;
  symmetry_ = &monitor;
  representative.symmetry_ = &monitor;
  representative.add_follower(this);
}

void CommandProcessor::add_follower(CommandProcessor* follower) {
  follower->follower_at_ = followers_.size();
  followers_.push_back(Follower{follower, nullptr});
}

void CommandProcessor::remove_follower(CommandProcessor* follower) {
  followers_[follower->follower_at_].gpu = nullptr;
  if (++followers_gone_ * 2 <= followers_.size()) return;
  size_t kept = 0;
  for (const Follower& f : followers_) {
    if (f.gpu == nullptr) continue;
    f.gpu->follower_at_ = kept;
    followers_[kept++] = f;
  }
  followers_.resize(kept);
  followers_gone_ = 0;
}

namespace {
bool same_ops(const std::shared_ptr<const std::vector<bool>>& a, const std::shared_ptr<const std::vector<bool>>& b) {
  return a == b || (a != nullptr && b != nullptr && *a == *b);
}
}  // namespace

const std::vector<bool>& CommandProcessor::replay_table(Follower& follower) {
  if (follower.replays != nullptr) return *follower.replays;
  const CommandProcessor& f = *follower.gpu;
  for (const auto& table : replay_tables_)
    if (table->program == f.rank_->program.get() && table->quiet_communicators == f.quiet_communicators_ &&
        table->quiet_peers == f.quiet_peers_ && same_ops(table->echoed, f.echoed_))
      return *(follower.replays = &table->ops);
  auto table = std::make_unique<ReplayTable>(
      ReplayTable{f.rank_->program.get(), f.quiet_communicators_, f.quiet_peers_, f.echoed_, {}});
  table->ops.resize(f.total_);
  for (uint32_t op = 0; op < f.total_; ++op) table->ops[op] = f.replays(op);
  replay_tables_.push_back(std::move(table));
  return *(follower.replays = &replay_tables_.back()->ops);
}

void CommandProcessor::replay(uint32_t index) {
  ++replaying_;
  tlm::tlm_generic_payload* gp = pool_.acquire();
  gp->set_address(index);
  fill_communication_event(protocol::collective_event(*gp), *job_, *rank_, index, rank_->program->ops[index],
                           (*calls_)[index]);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_time delay = sc_core::SC_ZERO_TIME;
  to_collectives->nb_transport_fw(*gp, phase, delay);
}

void CommandProcessor::matched(uint32_t index, bool leader) {
  const sc_time now = sc_core::sc_time_stamp();
  const size_t first = unmatched_.position(index);
  if (first == unmatched_.kNone) {
    unmatched_.add(index, Unmatched{now, leader});
    if (unmatched_.size() == 1) symmetry_->apart(rank_->rank, now);  // else told already
    return;
  }
  const Unmatched other = unmatched_.at(first);
  unmatched_.erase_at(first);
  if (other.leader == leader) return symmetry_->diverged(rank_->rank, leader_->rank_->rank, index);
  leader_->skewed(index, (now - other.at).to_seconds(), rank_->rank);  // `other` came first
}

void CommandProcessor::skewed(uint32_t index, double seconds, int follower) {
  Skew& s = skews_[index];
  if (s.farthest < 0 || seconds > s.seconds) {
    s.seconds = seconds;
    s.farthest = follower;
  }
  if (++s.followers < s.replaying) return;
  const Skew farthest = s;
  skews_.erase(index);
  symmetry_->skew(rank_->rank, farthest.farthest, index, farthest.seconds);
}

void CommandProcessor::forget(uint32_t index) {
  const size_t at = skews_.position(index);
  if (at == skews_.kNone) return;
  Skew& s = skews_.at(at);
  if (--s.replaying > s.followers) return;
  const Skew farthest = s;
  skews_.erase_at(at);
  if (farthest.followers > 0) symmetry_->skew(rank_->rank, farthest.farthest, index, farthest.seconds);
}

bool CommandProcessor::apart_since(sc_time& since) const {
  if (unmatched_.size() == 0) return false;
  since = unmatched_.begin()->second.at;
  for (const auto& [key, u] : unmatched_) since = std::min(since, u.at);
  return true;
}

std::vector<std::tuple<uint32_t, bool, sc_time>> CommandProcessor::apart_calls() const {
  std::vector<std::tuple<uint32_t, bool, sc_time>> calls;
  for (const auto& [key, u] : unmatched_) calls.emplace_back(uint32_t(key), u.leader, u.at);
  std::sort(calls.begin(), calls.end());
  return calls;
}

void CommandProcessor::follow_parted(CommandProcessor& parted) {
  CommandProcessor& rep = *leader_;
  for (uint32_t op = 0; op < total_; ++op) {
    const OpKind kind = rank_->program->ops[op].kind;
    if (kind == OpKind::Compute || kind == OpKind::MemCopy || !replays(op)) continue;
    const size_t at = unmatched_.position(op);
    const bool late = at != unmatched_.kNone && unmatched_.at(at).leader;   // rep completed it, not here
    const bool early = at != unmatched_.kNone && !unmatched_.at(at).leader;  // completed here first
    if (rep.waits_[op] == kIssued || late) {
      rep.forget(op);
      if (!early) ++parted.skews_[op].replaying;  // in flight here and there
    } else if (parted.waits_[op] == kIssued) {  // issued as it resumed: now, here too
      replay(op);
      ++parted.skews_[op].replaying;
    }
  }
  rep.remove_follower(this);
  parted.add_follower(this);
  parted.symmetry_ = symmetry_;
  unmatched_ = FewByKey<Unmatched>();
  leader_ = &parted;
}

bool CommandProcessor::can_part() const {
  if (leader_ == nullptr) return false;
  const std::vector<uint32_t>& rep = leader_->waits_;
  for (const auto& [key, u] : unmatched_) {
    if (rep[key] != (u.leader ? kComplete : kIssued)) return false;
    if (!u.leader) continue;
    const uint32_t* begin = graph_->successors.data() + graph_->successor_begin[key];
    const uint32_t* end = graph_->successors.data() + graph_->successor_begin[key + 1];
    if (std::any_of(begin, end, [&rep](uint32_t s) { return rep[s] == kComplete; })) return false;
  }
  return true;
}

void CommandProcessor::part() {
  CommandProcessor& rep = *leader_;
  waits_ = rep.waits_;
  iteration_ = rep.iteration_;
  completed_ = rep.completed_;
  // A call the representative completed and this GPU did not: in flight here, and what the
  // representative issued because of it not issued here (its communication closed): kernels and
  // calls left out. A call this GPU replays it issued with the representative: it stays in flight.
  std::vector<uint32_t> late;
  for (const auto& [key, u] : unmatched_) (u.leader ? late : early_).push_back(uint32_t(key));
  for (uint32_t u : late) {
    waits_[u] = kIssued;
    --completed_;
    activity_.communication_begin(cause_of_op(*job_, *rank_, rank_->program->ops[u]));
    for (uint32_t i = graph_->successor_begin[u]; i < graph_->successor_begin[u + 1]; ++i) {
      const uint32_t s = graph_->successors[i];
      const workloads::Op& op = rank_->program->ops[s];
      const bool call = op.kind != OpKind::Compute && op.kind != OpKind::MemCopy;
      if (waits_[s] != kIssued || (call && replays(s))) continue;
      waits_[s] = 0;
      if (!call) continue;
      activity_.communication_end(cause_of_op(*job_, *rank_, op));
      unissued_calls_.push_back(s);
    }
  }
  for (uint32_t u : late)
    for (uint32_t i = graph_->successor_begin[u]; i < graph_->successor_begin[u + 1]; ++i)
      if (waits_[graph_->successors[i]] < kIssued) ++waits_[graph_->successors[i]];
  // The representative no longer waits for this GPU's replays; the calls it makes for this GPU
  // (left out, echoed) complete here when its own do.
  rep.remove_follower(this);
  for (uint32_t op = 0; op < total_; ++op) {
    const OpKind kind = rank_->program->ops[op].kind;
    if (kind == OpKind::Compute || kind == OpKind::MemCopy) continue;
    if (waits_[op] == kIssued && !replays(op)) rep.made_for_[op].push_back(this);
    const bool owed = rep.waits_[op] == kIssued || (rep.waits_[op] == kComplete && waits_[op] != kComplete);
    if (replays(op) && owed) rep.forget(op);
  }
  unmatched_ = FewByKey<Unmatched>();
  parted_from_ = leader_;
  leader_ = nullptr;
  monitor_ = nullptr;  // the progress line counts the ops of the GPUs simulated from the start
}

void CommandProcessor::resume() {
  std::vector<uint32_t> early;
  early.swap(early_);
  for (uint32_t e : early) {
    activity_.communication_end(cause_of_op(*job_, *rank_, rank_->program->ops[e]));
    complete(e);
  }
}

tlm::tlm_generic_payload* CommandProcessor::kernel_payload(uint32_t index) {
  if (waits_[index] != kIssued) return nullptr;
  tlm::tlm_generic_payload* gp = pool_.acquire();
  gp->set_address(index);
  fill_compute_event(protocol::compute_event(*gp), *job_, rank_->rank, index, rank_->program->ops[index]);
  return gp;
}

std::vector<int> CommandProcessor::left_out_communicators() const {
  std::vector<int> out;
  for (size_t slot = 0; slot < quiet_communicators_.size(); ++slot)
    if (quiet_communicators_[slot]) out.push_back(rank_->communicators[slot]);
  return out;
}

void CommandProcessor::take_over(uint32_t index) {
  std::vector<CommandProcessor*>* parted = parted_from_->made_for_.find(index);
  if (parted == nullptr) return;
  const auto it = std::find(parted->begin(), parted->end(), this);
  if (it == parted->end()) return;
  parted->erase(it);
  if (parted->empty()) parted_from_->made_for_.erase(index);
  activity_.communication_end(cause_of_op(*job_, *rank_, rank_->program->ops[index]));
  issue(index);
}

void CommandProcessor::made_call_done(uint32_t index, sc_time issued) {
  call_closed(index, issued);
  made_calls_done(index, issued);  // (GPUs that parted from this one while it waited for it)
  complete(index);
}

}  // namespace tessera::models
