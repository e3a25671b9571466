// Replicas: groups of ranks that do the same work in the same places, so that one group can be
// simulated and the others replay it (docs/fidelity.md, "Symmetry").
//
// Ranks are grouped by what ties them together: a send/receive peer, or a communicator whose
// members run different programs (a pipeline stage's ranks with the next stage's), are in one
// group; a communicator whose members all run one program (data-, tensor-, expert-parallel
// groups) is what runs across groups. Two groups are replicas when their ranks, in rank order,
// run the same programs. The lowest group of each kind is simulated and every rank of the others
// follows the rank at its place there. Nothing here proves that a follower would have issued its
// ops at its representative's times (a tree's root finishes a call before its leaves, a
// network's paths differ in length and load): the simulation measures how far apart each
// follower's communication completes from its representative's as it runs, and runs every rank
// where that adds up to too much (sc_main/simulation.cpp).
#pragma once

#include <vector>

#include "workloads/program.h"

namespace tessera::workloads {

struct Replicas {
  // Per rank: the rank it follows, itself where it is simulated.
  std::vector<int> representative;
  int simulated = 0;  // ranks that are their own representative
  bool any() const { return simulated < static_cast<int>(representative.size()); }
};

// `job` is valid (workloads::validate: rank i is job.ranks[i]).
Replicas find_replicas(const Job& job);

}  // namespace tessera::workloads
