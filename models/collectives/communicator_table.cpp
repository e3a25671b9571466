#include "models/collectives/communicator_table.h"

#include <algorithm>

namespace tessera::models {

CommunicatorTable::CommunicatorTable(const workloads::Job& job, int gpus_per_node,
                                     const std::vector<int>& dimensions, int platform_gpus_per_node) {
  shapes_.reserve(job.communicators.size());
  int ranks = static_cast<int>(job.ranks.size());
  for (const auto& c : job.communicators) {
    shapes_.push_back(communicator_shape(c.ranks, gpus_per_node, dimensions, platform_gpus_per_node));
    for (int r : c.ranks) ranks = std::max(ranks, r + 1);
  }
  // Counting sort by rank: communicators in ascending order within each rank.
  rank_begin_.assign(size_t(ranks) + 1, 0);
  for (const auto& c : job.communicators)
    for (int r : c.ranks)
      if (r >= 0) ++rank_begin_[size_t(r) + 1];
  for (size_t r = 0; r < size_t(ranks); ++r) rank_begin_[r + 1] += rank_begin_[r];
  members_.resize(rank_begin_.back());
  std::vector<uint32_t> fill(rank_begin_.begin(), rank_begin_.end() - 1);
  for (size_t c = 0; c < job.communicators.size(); ++c) {
    const auto& list = job.communicators[c].ranks;
    for (size_t p = 0; p < list.size(); ++p)
      if (list[p] >= 0) members_[fill[size_t(list[p])]++] = Membership{int(c), int(p)};
  }
}

}  // namespace tessera::models
