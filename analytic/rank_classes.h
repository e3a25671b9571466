// Symmetry: ranks that are costed once. Two ranks are equivalent when they run the same
// program, their communicators have the same shape (as the collective tuner sees it: members,
// nodes, members per node, network nodes), and, refined until nothing changes, their
// communicators hold equivalent members at the same slots and their pipeline peers are
// equivalent (colour refinement). Equivalent ranks issue the same ops at the same times in the
// analytic model, so one representative per class stands for all. Nothing is assumed about
// the strategy: a job whose ranks all differ has as many classes as ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "models/collectives/tuner.h"
#include "workloads/program.h"

namespace tessera::analytic {

struct RankClasses {
  std::vector<int> of_rank;          // rank -> class
  std::vector<int> representative;   // class -> its lowest rank
  int count() const { return static_cast<int>(representative.size()); }
};

// `shapes[c]`: the tuner's shape of communicator c.
RankClasses rank_classes(const workloads::Job& job, const std::vector<models::CommunicatorShape>& shapes);

// The slot at which `rank` holds communicator `communicator` (its first), -1 if none.
int slot_of(const workloads::Rank& rank, int communicator);

}  // namespace tessera::analytic
