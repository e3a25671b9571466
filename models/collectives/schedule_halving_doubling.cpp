#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {


// Recursive halving (reduce-scatter) and doubling (all-gather): log2 n steps each, exchanging
// with the partner across a halving distance.
void halving_doubling_schedule(ScheduleBuilder& b) {
  const std::vector<int>& ranks = b.ranks();
  const int n = b.n(), p = b.call.position, C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  const bool reduce_part = b.call.reduce_part, gather_part = b.call.gather_part;
  int levels = 0;
  while ((1 << levels) < n) ++levels;
  if (reduce_part)
    for (int k = 0; k < levels; ++k) {
      const int partner = p ^ (n >> (k + 1));
      const uint64_t part = ceil_div(bytes, uint64_t(1) << (k + 1));
      Phase& ph = b.add(k - 1);
      ph.sends.push_back(b.transfer(ranks[partner], part, C));
      ph.receives.push_back(b.transfer(ranks[partner], part, C));
    }
  if (gather_part)
    for (int k = 0; k < levels; ++k) {
      const int partner = p ^ (1 << k);
      const uint64_t part = ceil_div(bytes, n) << k;
      Phase& ph = b.add(b.after_last());
      ph.sends.push_back(b.transfer(ranks[partner], part, C));
      ph.receives.push_back(b.transfer(ranks[partner], part, C));
    }
}

}  // namespace tessera::models
