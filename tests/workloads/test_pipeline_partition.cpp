// Pipeline partitioning: the slowest stage minimized, the embedding and output layer counted on
// their stages, transfers on both sides of a boundary, interleaved chunks.
#include <gtest/gtest.h>

#include <numeric>

#include "workloads/pipeline_partition.h"

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
