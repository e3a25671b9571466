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

}  // namespace
}  // namespace tessera::workloads
