// Replica groups (workloads/replicas.h): what ties ranks into a group, and which rank each rank
// of a replica group follows.
#include "workloads/replicas.h"

#include <gtest/gtest.h>

#include <memory>

namespace tessera::workloads {
namespace {

std::shared_ptr<Program> program_of(int ops) {
  auto p = std::make_shared<Program>();
  p->ops.resize(size_t(ops));
  return p;
}

// 2 pipeline stages x 2 tensor-parallel ranks x 2 data-parallel replicas: rank = t + 2 (s + 2 d).
// Each stage runs its own program; tp and dp groups are communicators, stages talk by send and
// receive.
Job pipeline_job() {
  Job job;
  const auto first = program_of(3), second = program_of(4);
  for (int r = 0; r < 8; ++r) {
    const int t = r % 2, s = (r / 2) % 2, d = r / 4;
    Rank rank;
    rank.rank = r;
    rank.program = s == 0 ? first : second;
    const int peer = t + 2 * ((1 - s) + 2 * d);
    rank.peers = {peer};
    job.ranks.push_back(rank);
  }
  for (int d = 0; d < 2; ++d)
    for (int s = 0; s < 2; ++s) job.communicators.push_back({"tp", {2 * (s + 2 * d), 2 * (s + 2 * d) + 1}});
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t) job.communicators.push_back({"dp", {t + 2 * s, t + 2 * (s + 2)}});
  for (Rank& rank : job.ranks)
    for (size_t c = 0; c < job.communicators.size(); ++c)
      for (int m : job.communicators[c].ranks)
        if (m == rank.rank) rank.communicators.push_back(int(c));
  return job;
}

TEST(Replicas, PipelinesOfOneTensorRankFollowTheFirst) {
  // tp and dp members run one program: they run across groups; a stage's send/receive peers tie
  // a group: {0, 2}, {1, 3}, {4, 6}, {5, 7}, all running (first, second).
  const Replicas r = find_replicas(pipeline_job());
  EXPECT_EQ(r.simulated, 2);
  EXPECT_TRUE(r.any());
  EXPECT_EQ(r.representative, (std::vector<int>{0, 0, 2, 2, 0, 0, 2, 2}));
}

TEST(Replicas, ACommunicatorOfDifferentProgramsTiesItsMembers) {
  Job job = pipeline_job();
  // An embedding group of the first and the second stage of replica 0's tensor rank 0 and 1:
  // {0, 1, 2, 3} is one group, unlike {4, 5, 6, 7}'s two: every rank runs its own.
  job.communicators.push_back({"embedding", {0, 2}});
  job.communicators.push_back({"embedding", {1, 3}});
  job.communicators.push_back({"tp-stages", {0, 1, 2, 3}});
  const Replicas r = find_replicas(job);
  EXPECT_EQ(r.representative, (std::vector<int>{0, 1, 2, 3, 4, 4, 6, 6}));
  EXPECT_EQ(r.simulated, 6);
}

TEST(Replicas, NoGroupsAlikeNoFollowers) {
  Job job = pipeline_job();
  // Rank 5 runs a program of its own: its tp group {4, 5} and dp group {1, 5} now mix programs
  // and tie {1, 3} with {4, 5, 6, 7}, which is like no other group, nor is {0, 2} now alone.
  job.ranks[5].program = program_of(3);
  const Replicas r = find_replicas(job);
  EXPECT_EQ(r.representative, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(r.any());
  Job lone;
  Rank only;
  only.program = program_of(1);
  lone.ranks.push_back(only);
  EXPECT_FALSE(find_replicas(lone).any());
}


// With two GPUs per node each node is one stage's tensor pair: nodes 0 and 1 hold the simulated
// ranks 0 and 2; nodes 2 and 3 hold followers only, their tp calls among their own GPUs, their
// dp calls and sends across nodes with one member in each: quiet, mirroring nodes 0 and 1.
TEST(QuietNodes, FollowerNodesLeaveOutTheirCallsAmongTheirGpus) {
  const Job job = pipeline_job();
  const QuietNodes q = quiet_nodes(job, find_replicas(job), 2);
  EXPECT_EQ(q.quiet, 2);
  EXPECT_EQ(q.mirror, (std::vector<int>{-1, -1, 0, 1}));
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(q.communicators[size_t(r)].empty()) << r;
  // Rank 4's slots: its tp communicator (left out), its dp one; its peer in node 3.
  EXPECT_EQ(q.communicators[4], (std::vector<bool>{true, false}));
  EXPECT_EQ(q.peers[4], (std::vector<bool>{false}));
}

// Four GPUs per node: a node is a whole replica; the followers' node sends within itself too.
TEST(QuietNodes, SendsBetweenAQuietNodesGpusAreLeftOut) {
  const Job job = pipeline_job();
  const QuietNodes q = quiet_nodes(job, find_replicas(job), 4);
  EXPECT_EQ(q.quiet, 1);
  EXPECT_EQ(q.mirror, (std::vector<int>{-1, 0}));
  EXPECT_EQ(q.peers[6], (std::vector<bool>{true}));
}

TEST(QuietNodes, ACallReachingBeyondANodeWithTwoMembersInItKeepsItsCalls) {
  Job job = pipeline_job();
  // Ranks 0, 4 and 5 run the first stage's program: a group across replicas with two members in
  // node 1, whose traffic between 4 and 5 would share node 1's links.
  job.communicators.push_back({"across", {0, 4, 5}});
  for (int r : {0, 4, 5}) job.ranks[size_t(r)].communicators.push_back(int(job.communicators.size()) - 1);
  const QuietNodes q = quiet_nodes(job, find_replicas(job), 4);
  EXPECT_EQ(q.quiet, 0);
  EXPECT_EQ(q.mirror, (std::vector<int>{-1, -1}));
}

TEST(QuietNodes, ANodeUnlikeEverySimulatedOneKeepsItsCalls) {
  Job job = pipeline_job();
  // Replica 1's first tensor pair in the other order: no node with a simulated GPU has its shape.
  job.communicators[2].ranks = {5, 4};
  const QuietNodes q = quiet_nodes(job, find_replicas(job), 4);
  EXPECT_EQ(q.quiet, 0);
  // Partial nodes are never quiet.
  EXPECT_EQ(quiet_nodes(job, find_replicas(job), 3).quiet, 0);
}

// Two GPUs per node: nodes 0 and 1 hold a simulated GPU (0, 2) and its follower (1, 3), and
// their tp pair is the whole node: echo nodes. Nodes 2 and 3 hold no simulated GPU.
TEST(EchoNodes, ASimulatedGpuAndItsFollowersWithCallsOfTheWholeNode) {
  const Job job = pipeline_job();
  const EchoNodes e = echo_nodes(job, find_replicas(job), 2);
  EXPECT_EQ(e.echo, 2);
  EXPECT_EQ(e.simulated, (std::vector<int>{0, 2, -1, -1}));
  // The simulated GPUs' slots: tp (the node's), dp (across nodes); nothing for the others.
  for (int r : {0, 2}) EXPECT_EQ(e.communicators[size_t(r)], (std::vector<bool>{true, false})) << r;
  for (int r : {1, 3, 4, 5, 6, 7}) EXPECT_TRUE(e.communicators[size_t(r)].empty()) << r;
}

TEST(EchoNodes, TwoSimulatedGpusOrSendsInTheNodeOrAnotherSlotKeepTheirCalls) {
  const Job job = pipeline_job();
  // Four GPUs per node: node 0 holds ranks 0 and 2, both simulated, and sends between them.
  EXPECT_EQ(echo_nodes(job, find_replicas(job), 4).echo, 0);
  // A communicator of rank 0 alone moves nothing between GPUs (a data-parallel group of dp 1):
  // node 0 still echoes, and the communicator is not one of its echoed slots.
  Job part = pipeline_job();
  part.communicators.push_back({"self", {0}});
  part.ranks[0].communicators.push_back(int(part.communicators.size()) - 1);
  const EchoNodes e = echo_nodes(part, find_replicas(part), 2);
  EXPECT_EQ(e.simulated, (std::vector<int>{0, 2, -1, -1}));
  EXPECT_EQ(e.echo, 2);
  EXPECT_EQ(e.communicators[0], (std::vector<bool>{true, false, false}));
  // The tp pair named at another slot by the follower: not the same call at each GPU's slot.
  Job swapped = pipeline_job();
  std::swap(swapped.ranks[1].communicators[0], swapped.ranks[1].communicators[1]);
  EXPECT_EQ(echo_nodes(swapped, find_replicas(swapped), 2).simulated, (std::vector<int>{-1, 2, -1, -1}));
}

}  // namespace
}  // namespace tessera::workloads
