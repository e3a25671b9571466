// The job's communicators as the ranks' collective engines see them: each communicator's shape
// (the tuner's view: members per node, network nodes, dimensions) and, per rank, the
// communicators it belongs to with its position in each. Built once per platform and shared by
// every engine: an engine that kept a shape and a position for every communicator of the job
// would cost GPUs x communicators, quadratic in GPUs (65,536 GPUs have some 20,000 communicators).
#pragma once

#include <cstdint>
#include <vector>

#include "models/collectives/tuner.h"
#include "workloads/program.h"

namespace tessera::models {

class CommunicatorTable {
 public:
  // Shapes as communicator_shape(ranks, gpus_per_node, dimensions, platform_gpus_per_node).
  CommunicatorTable(const workloads::Job& job, int gpus_per_node, const std::vector<int>& dimensions,
                    int platform_gpus_per_node);

  const CommunicatorShape& shape(int communicator) const { return shapes_[size_t(communicator)]; }

  struct Membership {
    int communicator = -1;
    int position = -1;  // the rank's place in the communicator's rank list
  };
  // Rank r's communicators, ascending, as [begin, end); empty for a rank beyond the job's.
  const Membership* begin(int rank) const { return members_.data() + first(rank); }
  const Membership* end(int rank) const { return members_.data() + first(rank + 1); }

 private:
  uint32_t first(int rank) const {
    return rank < 0 ? 0 : rank_begin_[std::min(size_t(rank), rank_begin_.size() - 1)];
  }

  std::vector<CommunicatorShape> shapes_;
  std::vector<uint32_t> rank_begin_;  // rank -> its first entry in members_ (ranks + 1 entries)
  std::vector<Membership> members_;
};

}  // namespace tessera::models
