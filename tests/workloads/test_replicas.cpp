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

}  // namespace
}  // namespace tessera::workloads
