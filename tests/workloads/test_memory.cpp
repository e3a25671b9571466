// Memory model: activation bytes per layer against Korthikanti et al. 2022 (Table 2), the
// schedule's peak of micro-batches in flight, ZeRO sharding, and the out-of-memory error.
#include <gtest/gtest.h>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

// GPT-3 175B's layer shape, unfused attention (the paper's setting), micro-batch b.
constexpr double s = 2048, h = 12288, a = 96, b = 2, t = 8;

double per_layer(int tp, bool sp, Recompute recompute) {
  ModelSpec m = gpt(96, int64_t(h), int64_t(a), int64_t(s), 51200);
  Strategy st;
  st.tp = tp;
  st.sequence_parallel = sp;
  st.recompute = recompute;
  st.micro_batch = int64_t(b);
  st.flash_attention = false;
  return layer_activation_bytes(m, resolve(m, st));
}

TEST(Korthikanti, NoParallelismNoRecompute) {
  EXPECT_TRUE(near_rel(per_layer(1, false, Recompute::None), s * b * h * (34 + 5 * a * s / h)));
}
TEST(Korthikanti, TensorParallel) {
  EXPECT_TRUE(near_rel(per_layer(8, false, Recompute::None),
                       s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
}
TEST(Korthikanti, TensorAndSequenceParallel) {
  EXPECT_TRUE(near_rel(per_layer(8, true, Recompute::None), s * b * h / t * (34 + 5 * a * s / h)));
}
TEST(Korthikanti, TensorParallelSelectiveRecompute) {
  EXPECT_TRUE(near_rel(per_layer(8, false, Recompute::Selective), s * b * h * (10 + 24 / t)));
}
TEST(Korthikanti, TensorSequenceParallelSelectiveRecompute) {
  EXPECT_TRUE(near_rel(per_layer(8, true, Recompute::Selective), 34 * s * b * h / t));
}
TEST(Korthikanti, FullRecomputeKeepsTheLayerInput) {
  EXPECT_TRUE(near_rel(per_layer(8, false, Recompute::Full), 2 * s * b * h));
  // With sequence parallelism the kept input is the sequence shard.
  EXPECT_TRUE(near_rel(per_layer(8, true, Recompute::Full), 2 * s * b * h / t));
}
TEST(Korthikanti, FlashAttentionKeepsNoScores) {
  // Fused attention saves only the log-sum-exp statistics (fp32 per head and token).
  ModelSpec m = gpt(96, int64_t(h), int64_t(a), int64_t(s), 51200);
  Strategy st;
  st.micro_batch = int64_t(b);
  EXPECT_TRUE(near_rel(layer_activation_bytes(m, resolve(m, st)), s * b * h * 34 + 4 * a * s * b));
}

// A small GPT on p stages; returns the compiled job.
CompiledJob pipeline(Schedule schedule, int pp, int vpp, int64_t micro_batches) {
  ModelSpec m = gpt(16, 256, 8, 128, 1024);
  Strategy st;
  st.pp = pp;
  st.vpp = vpp;
  st.schedule = schedule;
  st.global_batch = micro_batches;
  st.flash_attention = false;
  return compile(m, st);
}

TEST(ActivationPeak, OneFOneBFirstStageHoldsPMicroBatches) {
  const CompiledJob c = pipeline(Schedule::OneFOneB, 4, 1, 8);
  EXPECT_EQ(c.peak_in_flight, (std::vector<int64_t>{4, 3, 2, 1}));
  // Stage 1 holds 3 micro-batches of its 4 layers, nothing else.
  const double layer = layer_activation_bytes(gpt(16, 256, 8, 128, 1024), c.strategy);
  EXPECT_DOUBLE_EQ(c.memory[1].activations, 3 * 4 * layer);
  // Stage 0 also keeps the embedding dropout mask (1 byte per element) per micro-batch.
  EXPECT_DOUBLE_EQ(c.memory[0].activations, 4 * (4 * layer + 128 * 256));
}

TEST(ActivationPeak, GPipeHoldsEveryMicroBatch) {
  const CompiledJob c = pipeline(Schedule::GPipe, 4, 1, 8);
  EXPECT_EQ(c.peak_in_flight, (std::vector<int64_t>{8, 8, 8, 8}));
}

TEST(ActivationPeak, InterleavedWarmup) {
  // Megatron: stage i runs (p - i - 1) * 2 + (v - 1) * p warm-up chunk forwards, then holds
  // one more before its first backward.
  const CompiledJob c = pipeline(Schedule::Interleaved, 4, 2, 8);
  EXPECT_EQ(c.peak_in_flight, (std::vector<int64_t>{11, 9, 7, 5}));
}

TEST(Zero, ShardsStatesGradientsAndParameters) {
  // DP only: every rank holds the whole model of P parameters (tied embedding counted once).
  ModelSpec m = gpt(4, 256, 8, 128, 1024);
  const double P = total_parameters(m);
  Strategy st;
  st.dp = 4;
  const int dp = 4;
  for (int zero = 0; zero <= 3; ++zero) {
    st.zero = zero;
    const CompiledJob c = compile(m, st);
    const MemoryBreakdown& mem = c.memory[0];
    EXPECT_DOUBLE_EQ(mem.params, 2 * P / (zero >= 3 ? dp : 1)) << "zero " << zero;
    EXPECT_DOUBLE_EQ(mem.grads, 4 * P / (zero >= 2 ? dp : 1)) << "zero " << zero;
    EXPECT_DOUBLE_EQ(mem.optimizer, 12 * P / (zero >= 1 ? dp : 1)) << "zero " << zero;
    EXPECT_DOUBLE_EQ(mem.peak, mem.params + mem.grads + mem.optimizer + mem.activations + mem.temporary);
  }
}

TEST(Zero, TensorParallelShardsTheWeights) {
  // Per rank: sharded matrices / t plus the replicated norms and row-parallel biases.
  ModelSpec m = gpt(4, 256, 8, 128, 1024);
  Strategy st;
  st.tp = 4;
  const CompiledJob c = compile(m, st);
  const double H = 256, V = 1024, S = 128, L = 4;
  const double sharded = L * (12 * H * H + 3 * H + 4 * H) + V * H;   // QKV, proj, MLP + biases
  const double replicated = L * (4 * H + 2 * H) + S * H + 2 * H;     // norms, biases, positions
  EXPECT_DOUBLE_EQ(c.memory[0].params, 2 * (sharded / 4 + replicated));
  EXPECT_DOUBLE_EQ(sharded + replicated, total_parameters(m));
}

TEST(OutOfMemory, NamesRankAndSizes) {
  ModelSpec m = load_model("gpt3-175b");
  Strategy st;
  st.tp = 8;
  st.dp = 1;
  try {
    check_memory(compile(m, st), 80.0 * 1024 * 1024 * 1024);
    FAIL() << "expected out of memory";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.rank, 0);
    EXPECT_EQ(std::string(e.what()).rfind("out of memory on rank 0: needs ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(" GiB, has 80.00 GiB"), std::string::npos) << e.what();
  }
}

}  // namespace
