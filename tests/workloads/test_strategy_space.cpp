// The strategy space a search walks: counts by kind, reasons with their numbers as N, and memory
// that agrees with compile() (what `tessera run` checks).
#include <gtest/gtest.h>

#include <algorithm>

#include "workloads/strategy_space.h"
#include "workloads/workload.h"

namespace tessera::workloads {
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

TEST(StrategySpace, ReasonsKeepTheirWordsAndLoseTheirNumbers) {
  EXPECT_EQ(reason_class("invalid strategy: tp (3) does not divide heads (16)"), "tp (N) does not divide heads (N)");
  EXPECT_EQ(reason_class("invalid strategy: dp * tp * pp * cp (2 * 2 * 2 * 1 = 8) != 16 GPUs"),
            "dp * tp * pp * cp (N * N * N * N = N) != N GPUs");
}

TEST(StrategySpace, DefaultsFollowTheModelAndTheNode) {
  const ModelSpec m = load_model("gpt3-13b");  // 40 layers, 40 heads
  const SpaceDimensions d = complete_dimensions({}, m, 16, 8);
  EXPECT_EQ(d.tp, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(d.pp, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(d.ep, (std::vector<int>{1}));
  SpaceDimensions given;
  given.tp = {2};
  EXPECT_EQ(complete_dimensions(given, m, 16, 8).tp, (std::vector<int>{2}));
}

TEST(StrategySpace, EveryCandidateIsCountedOnceAndMemoryAgreesWithCompile) {
  const ModelSpec m = load_model("gpt3-13b");
  SpaceDimensions g;
  g.tp = {1, 2, 3, 4};
  g.pp = {1, 2};
  g.micro_batch = {1, 2};
  g.schedule = {Schedule::OneFOneB};
  g.zero = {0, 1};
  g.recompute = {Recompute::None, Recompute::Full};
  const SpaceDimensions d = complete_dimensions(g, m, 16, 8);
  const double hbm = 80 * GiB;
  const SpaceWalk w = walk_strategy_space(m, default_strategy(m), d, 16, 32, hbm);
  EXPECT_EQ(w.enumerated, 4u * 2 * 2 * 2 * 2 * 2 * 2);  // x cp 1,2 x sequence parallelism off,on
  EXPECT_EQ(w.enumerated, w.redundant + w.excluded + w.invalid_total() + w.out_of_memory.size() + w.dominated.size() +
                              w.kept.size());
  EXPECT_GT(w.invalid.count("tp * pp * cp (N * N * N = N) does not divide the N GPUs"), 0u);
  ASSERT_FALSE(w.out_of_memory.empty());
  ASSERT_FALSE(w.kept.empty());
  for (const auto* list : {&w.out_of_memory, &w.dominated, &w.kept})
    for (const Candidate& c : *list) {
      const CompiledJob job = compile(m, c.strategy, 16);
      double peak = 0;
      for (const MemoryBreakdown& b : job.memory) peak = std::max(peak, b.peak);
      EXPECT_DOUBLE_EQ(peak, c.peak_memory_bytes);
      if (list == &w.out_of_memory) EXPECT_THROW(check_memory(job, hbm), OutOfMemoryError);
      else EXPECT_NO_THROW(check_memory(job, hbm));
    }
}

// A candidate that recomputes more than a twin that fits is set aside, and only then: every
// dominated candidate has a kept twin recomputing less, and keeping them all returns them.
TEST(StrategySpace, MoreRecomputeThanATwinThatFitsIsDominated) {
  const ModelSpec m = load_model("gpt3-13b");
  SpaceDimensions g;
  g.tp = {2, 4};
  g.pp = {1, 2};
  g.cp = {1};
  g.micro_batch = {1, 4};
  g.schedule = {Schedule::OneFOneB};
  g.zero = {0};
  g.sequence_parallel = {true};
  g.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  SpaceDimensions d = complete_dimensions(g, m, 16, 8);
  const double hbm = 32 * GiB;  // some strategies fit only with recompute
  Strategy base = default_strategy(m);
  base.flash_attention = false;  // selective recompute is then a distinct run
  const SpaceWalk w = walk_strategy_space(m, base, d, 16, 32, hbm);
  ASSERT_FALSE(w.dominated.empty()) << w.kept.size() << " kept, " << w.out_of_memory.size() << " out of memory, " << w.invalid_total() << " invalid, " << w.redundant << " redundant";
  auto twin = [](Strategy s, Recompute r) {
    s.recompute = r;
    return s;
  };
  auto kept = [&](const Strategy& s) {
    return std::any_of(w.kept.begin(), w.kept.end(), [&](const Candidate& c) {
      return c.strategy.recompute == s.recompute && c.strategy.tp == s.tp &&
             c.strategy.pp == s.pp && c.strategy.micro_batch == s.micro_batch;
    });
  };
  bool fits_only_with_recompute = false;
  for (const Candidate& c : w.kept) {
    EXPECT_FALSE(c.strategy.recompute != Recompute::None && kept(twin(c.strategy, Recompute::None)));
    fits_only_with_recompute |= c.strategy.recompute != Recompute::None;
  }
  EXPECT_TRUE(fits_only_with_recompute) << "the space should hold a strategy that fits only with recompute";
  for (const Candidate& c : w.dominated) {
    EXPECT_NE(c.strategy.recompute, Recompute::None);
    EXPECT_TRUE(kept(twin(c.strategy, Recompute::None)) ||
                (c.strategy.recompute == Recompute::Full && kept(twin(c.strategy, Recompute::Selective))));
  }
  d.keep_dominated = true;
  const SpaceWalk all = walk_strategy_space(m, base, d, 16, 32, hbm);
  EXPECT_TRUE(all.dominated.empty());
  EXPECT_EQ(all.kept.size(), w.kept.size() + w.dominated.size());
}

// ZeRO stages 1 and 2 compile to the same programs (stage 2 shards the gradients, which only the
// memory shows), which is why the walk keeps one of the two where both fit: if this fails, the
// two stages became different runs and drop_zero_twins() must go.
TEST(StrategySpace, ZeroOneAndTwoAreTheSameRunAndOnlyOneIsKept) {
  const ModelSpec m = load_model("gpt3-13b");
  Strategy s = default_strategy(m);
  s.tp = 2, s.pp = 2, s.dp = 0, s.micro_batch = 1, s.global_batch = 16, s.schedule = Schedule::OneFOneB;
  s.zero = 1;
  const CompiledJob one = compile(m, s, 16);
  s.zero = 2;
  const CompiledJob two = compile(m, s, 16);
  EXPECT_EQ(one.job.names, two.job.names);
  EXPECT_EQ(one.job.stream_names, two.job.stream_names);
  ASSERT_EQ(one.job.communicators.size(), two.job.communicators.size());
  for (size_t i = 0; i < one.job.communicators.size(); ++i)
    EXPECT_EQ(one.job.communicators[i].ranks, two.job.communicators[i].ranks);
  ASSERT_EQ(one.job.ranks.size(), two.job.ranks.size());
  for (size_t r = 0; r < one.job.ranks.size(); ++r) {
    const std::vector<Op>& a = one.job.ranks[r].program->ops;
    const std::vector<Op>& b = two.job.ranks[r].program->ops;
    ASSERT_EQ(a.size(), b.size()) << "rank " << r;
    for (size_t i = 0; i < a.size(); ++i) {
      const bool same = a[i].kind == b[i].kind && a[i].stream == b[i].stream && a[i].name == b[i].name &&
                        std::equal(a[i].deps.begin(), a[i].deps.end(), b[i].deps.begin(), b[i].deps.end()) &&
                        a[i].flops == b[i].flops && a[i].bytes == b[i].bytes && a[i].message_bytes == b[i].message_bytes &&
                        a[i].slot == b[i].slot && a[i].tag == b[i].tag && a[i].collective == b[i].collective &&
                        a[i].micro_batch == b[i].micro_batch;
      ASSERT_TRUE(same) << "rank " << r << " op " << i << ": " << one.job.op_name(a[i]);
    }
  }
  EXPECT_LT(two.memory[0].grads, one.memory[0].grads);

  SpaceDimensions g;
  g.tp = {2};
  g.pp = {2};
  g.cp = {1};
  g.micro_batch = {1};
  g.schedule = {Schedule::OneFOneB};
  g.recompute = {Recompute::None};
  g.sequence_parallel = {true};
  g.zero = {1, 2};
  const SpaceWalk w = walk_strategy_space(m, default_strategy(m), complete_dimensions(g, m, 16, 8), 16, 16, 80 * GiB);
  ASSERT_EQ(w.kept.size(), 1u);
  EXPECT_EQ(w.redundant, 1u);
  const Strategy& kept = w.kept[0].strategy;
  Strategy other = kept;
  other.dp = 0, other.zero = 3 - kept.zero;
  double other_peak = 0;
  for (const MemoryBreakdown& b : compile(m, other, 16).memory) other_peak = std::max(other_peak, b.peak);
  EXPECT_LE(w.kept[0].peak_memory_bytes, other_peak);  // the one needing less memory stays
}

}  // namespace
}  // namespace tessera::workloads
