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
// follower's communication completes from its representative's as it runs, parts a follower
// whose calls come apart from its representative's, and runs every rank where that cannot be
// done (sc_main/symmetric_run.cpp).
#pragma once

#include <cstdint>
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

// Quiet nodes: nodes (of `gpus_per_node` consecutive ranks) where no GPU is simulated, whose
// calls among their own GPUs (collectives whose members are all in the node, sends and receives
// between two of its GPUs) a follower leaves out: nothing simulated waits for them, and where a
// node's links between its GPUs carry nothing else (Routing::node_link_use; checked as the run
// goes by the flow fabric), nothing simulated shares their links. A node is quiet when
//  - its GPUs are all followers;
//  - no call that reaches beyond the node has two members in it (its traffic between them
//    would share the links left out);
//  - a node with a simulated GPU mirrors it: the same programs at every place in the node and
//    the same calls among its GPUs (same slots, same places, same order), none reaching beyond
//    with two members; the report gives the quiet node's links between GPUs that node's figures.
struct QuietNodes {
  std::vector<int> mirror;  // per node: the node it mirrors, or -1 where it is not quiet
  std::vector<std::vector<bool>> communicators, peers;  // per rank, per slot: a call left out
  int quiet = 0;                                          // quiet nodes
};
QuietNodes quiet_nodes(const Job& job, const Replicas& replicas, int gpus_per_node);

// Echo nodes: nodes whose GPUs are one simulated GPU and followers of it, whose calls among
// themselves are all on communicators of the whole node. The followers leave those calls out,
// and the simulated GPU takes what its own transfers deliver for what its peers would have sent
// it (docs/fidelity.md, "Echo nodes"): every member issues the call at the same time and sends
// the same bytes in the same pattern, so where the node's links give each member's transfers
// links of their own (checked by the simulation, with the algorithm each call runs) a peer's
// transfer to it is its own transfer's image. A node is an echo node when
//  - exactly one of its GPUs is simulated and every other follows it;
//  - no call that reaches beyond the node has two members in it (as for quiet nodes);
//  - no send or receive joins two of its GPUs;
//  - every communicator of its GPUs' that lies inside the node holds all of the node's GPUs,
//    and each GPU names it at the same slot as the simulated GPU (a communicator of one GPU
//    moves nothing and does not count).
struct EchoNodes {
  std::vector<int> simulated;  // per node: its simulated GPU, or -1 where it is no echo node
  // Per rank, per slot, for an echo node's simulated GPU (empty for every other rank): a call on
  // a communicator of the whole node, which it echoes (each follower names it at the same slot
  // and leaves it out).
  std::vector<std::vector<bool>> communicators;
  int echo = 0;  // echo nodes
};
EchoNodes echo_nodes(const Job& job, const Replicas& replicas, int gpus_per_node);

}  // namespace tessera::workloads
