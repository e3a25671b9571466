#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::CollectiveOp;

// Direct: every member to every other at once (all-to-all, and the one-step reduce-scatter
// and all-gather of an all-reduce); broadcast and reduce from and to the root.
void direct_schedule(ScheduleBuilder& b) {
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
    for (int k = 1; k < n; ++k) {
      const int to = (p + k) % n, from = (p - k + n) % n;
      const uint64_t out = b.call.splits ? b.call.splits[size_t(p) * n + to] : segment;
      const uint64_t in = b.call.splits ? b.call.splits[size_t(from) * n + p] : segment;
      if (out > 0) ph.sends.push_back(b.transfer(ranks[to], out, C));
      if (in > 0) ph.receives.push_back(b.transfer(ranks[from], in, C));
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
