// Pipeline partitioning: the slowest stage minimized, the embedding and output layer counted on
// their stages, transfers on both sides of a boundary, interleaved chunks.
#include <gtest/gtest.h>

#include <numeric>

#include "workloads/pipeline_partition.h"
#include "workloads/workload.h"

namespace tessera::workloads {
namespace {

TEST(PipelinePartition, EqualLayersWithoutExtrasSplitEvenly) {
  const UnitCosts c{std::vector<double>(24, 1.0), 0, 0};
  EXPECT_EQ(partition_layers(c, 4, {0, 0, 0}), (std::vector<int64_t>{6, 6, 6, 6}));
  EXPECT_DOUBLE_EQ(slowest_stage(c, {6, 6, 6, 6}, {0, 0, 0}), 6.0);
}

TEST(PipelinePartition, TheOutputLayerTakesLayersOffTheLastStage) {
  // 16 layers of 1 s, an output layer worth 2 layers: uniform 4 per stage makes the last 6 s;
  // the optimum holds every stage at 5 s or less.
  const UnitCosts c{std::vector<double>(16, 1.0), 0, 2.0};
  const std::vector<int64_t> layers = partition_layers(c, 4, {0, 0, 0});
  EXPECT_EQ(std::accumulate(layers.begin(), layers.end(), int64_t(0)), 16);
  EXPECT_LT(layers.back(), 4);  // 2 or 3: both hold the slowest stage at 5 s
  EXPECT_DOUBLE_EQ(slowest_stage(c, layers, {0, 0, 0}), 5.0);
  EXPECT_DOUBLE_EQ(slowest_stage(c, {4, 4, 4, 4}, {0, 0, 0}), 6.0);
}

TEST(PipelinePartition, ASlowBoundaryWeighsOnBothItsStages) {
  // Two stages of 8 layers each, joined by a 3 s transfer: each side carries it.
  const UnitCosts c{std::vector<double>(8, 1.0), 0, 0};
  EXPECT_DOUBLE_EQ(slowest_stage(c, {4, 4}, {3.0}), 7.0);
  // Four stages, boundary 1 slow: stages 1 and 2 take fewer layers than 0 and 3.
  const std::vector<int64_t> layers = partition_layers(c, 4, {0, 2.0, 0});
  EXPECT_LT(layers[1], layers[0]);
  EXPECT_LT(layers[2], layers[3]);
  EXPECT_LE(slowest_stage(c, layers, {0, 2.0, 0}), slowest_stage(c, {2, 2, 2, 2}, {0, 2.0, 0}));
}

TEST(PipelinePartition, EveryStageHoldsALayer) {
  const UnitCosts c{{1, 1, 1, 100}, 0, 0};
  const std::vector<int64_t> layers = partition_layers(c, 4, {0, 0, 0});
  EXPECT_EQ(layers, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(PipelinePartition, InterleavingSplitsEachStageOverItsChunks) {
  // Stage k's chunk c is virtual stage c * stages + k.
  EXPECT_EQ(interleave({4, 3, 2}, 2), (std::vector<int64_t>{2, 2, 1, 2, 1, 1}));
}

}  // namespace
}  // namespace tessera::workloads

namespace tessera::workloads {
namespace {

TEST(ExtraWarmup, StagesRunAheadAndHoldMoreMicroBatches) {
  // 1F1B on 4 stages, 8 micro-batches: stage 1 warms up with 2 forwards, 3 with one more.
  const auto plain = pipeline_schedule(Schedule::OneFOneB, 4, 1, 8, 1);
  const auto deeper = pipeline_schedule(Schedule::OneFOneB, 4, 1, 8, 1, 1);
  EXPECT_EQ(plain.size(), 16u);
  EXPECT_EQ(deeper.size(), 16u);
  EXPECT_EQ(peak_in_flight(plain), 3);
  EXPECT_EQ(peak_in_flight(deeper), 4);
  EXPECT_TRUE(deeper[2].forward);
  EXPECT_FALSE(plain[3].forward);
  // Never beyond every micro-batch.
  EXPECT_EQ(peak_in_flight(pipeline_schedule(Schedule::OneFOneB, 4, 0, 8, 1, 100)), 8);
}

TEST(ExtraWarmup, ResolveChecksOneEntryPerStageNeverIncreasing) {
  const ModelSpec m = load_model("gpt3-1.3b");
  Strategy s;
  s.pp = 4;
  s.global_batch = 16;
  set_strategy_option(s, "extra-warmup", "2,1,1,0");
  EXPECT_NO_THROW(resolve(m, s, 4));
  set_strategy_option(s, "extra-warmup", "0,1,0,0");
  EXPECT_THROW(resolve(m, s, 4), InputError);
  set_strategy_option(s, "extra-warmup", "1,0");
  EXPECT_THROW(resolve(m, s, 4), InputError);
  // The memory of the deeper warm-up: more activations in flight on the stages that run ahead.
  set_strategy_option(s, "extra-warmup", "1,1,1,0");
  const auto deeper = estimate_stage_memory(m, s, 4);
  s.extra_warmup.clear();
  const auto plain = estimate_stage_memory(m, s, 4);
  EXPECT_GT(deeper[1].activations, plain[1].activations);
  EXPECT_DOUBLE_EQ(deeper[3].activations, plain[3].activations);
}

}  // namespace
}  // namespace tessera::workloads
