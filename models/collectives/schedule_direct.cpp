#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::CollectiveOp;

namespace {
// NCCL's round k (scheduleP2pTasksToPlan: send to p + k, receive from p - k) runs on p2p_plan's
// channels for its message, spread over the kernel's channels from k on (enqueue.cc
// ncclP2pChannelForPart: base k, parts bit-reversed across the channels): the channels
// k + stride x j modulo the kernel's (send_chunk), stride = kernel channels / message channels.
void on_round_channels(Transfer& t, const P2pPlan& plan, int round, int kernel_channels) {
  const int stride = std::max(1, kernel_channels / std::max(1, plan.channels));
  t.channels = static_cast<uint16_t>(std::min(plan.channels, kernel_channels));
  t.stride = static_cast<uint16_t>(stride);
  t.first_channel = static_cast<uint16_t>(round % std::max(1, kernel_channels));
}
}  // namespace

// Direct: every member to every other at once (all-to-all, and the one-step reduce-scatter
// and all-gather of an all-reduce); broadcast and reduce from and to the root.
void direct_schedule(ScheduleBuilder& b, const Tuner& tuner, int gpus_per_node) {
  const std::vector<int>& ranks = b.ranks();
  const int n = b.n(), p = b.call.position, C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  const CollectiveOp kind = b.call.kind;
  const bool reduce_part = b.call.reduce_part, gather_part = b.call.gather_part;
  if (kind == CollectiveOp::Broadcast || kind == CollectiveOp::Reduce) {
    Phase& ph = b.add(-1);
    const bool root = p == 0;
    if (kind == CollectiveOp::Broadcast) {
      if (root) for (int k = 1; k < n; ++k) ph.sends.push_back(b.transfer(b.rank_at(k), bytes, C));
      else ph.receives.push_back(b.transfer(ranks[0], bytes, C));
    } else {
      if (root) for (int k = 1; k < n; ++k) ph.receives.push_back(b.transfer(b.rank_at(k), bytes, C));
      else ph.sends.push_back(b.transfer(ranks[0], bytes, C));
    }
    return;
  }
  if (kind == CollectiveOp::AllToAll || kind == CollectiveOp::AllToAllV) {
    Phase& ph = b.add(-1);
    const uint64_t segment = ceil_div(bytes, n);
    const bool p2p = tuner.runs_p2p(kind);
    auto across = [&](int peer) { return gpus_per_node > 0 && peer / gpus_per_node != b.call.rank / gpus_per_node; };
    auto add = [&](std::vector<Transfer>& to, int peer, uint64_t part, int round) {
      if (part == 0) return;
      if (!p2p) return to.push_back(b.transfer(peer, part, C));
      const P2pPlan plan = tuner.p2p_plan(part, n, across(peer));
      to.push_back(b.transfer(peer, part, plan.channels));
      on_round_channels(to.back(), plan, round, C);
    };
    for (int k = 1; k < n; ++k) {
      const int to = (p + k) % n, from = (p - k + n) % n;
      add(ph.sends, ranks[to], b.call.splits ? b.call.splits[size_t(p) * n + to] : segment, k);
      add(ph.receives, ranks[from], b.call.splits ? b.call.splits[size_t(from) * n + p] : segment, k);
    }
    return;
  }
  const uint64_t shard = ceil_div(bytes, n);
  for (int part = 0; part < 2; ++part) {
    if ((part == 0 && !reduce_part) || (part == 1 && !gather_part)) continue;
    Phase& ph = b.add(b.after_last());
    for (int k = 1; k < n; ++k) {
      ph.sends.push_back(b.transfer(b.rank_at(p + k), shard, C));
      ph.receives.push_back(b.transfer(b.rank_at(p - k), shard, C));
    }
  }
}

}  // namespace tessera::models
