// Memory model: activation bytes per layer against Korthikanti et al. 2022 (Table 2), the
// schedule's peak of micro-batches in flight, ZeRO sharding, and the out-of-memory error.
#include <algorithm>

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

// ZeRO-3's working buffers against a hand calculation (docs/workloads.md, "Memory model"):
// DeepSpeed's defaults stage3_max_live_parameters = 1e9 and reduce_bucket_size = 5e8.
TEST(Zero3, Gpt530bOnDp640FitsAnA100AsWithDeepSpeed) {
  // Megatron's 530B row (Narayanan et al. 2021), ZeRO-3 on 640 GPUs, micro-batch 4, full
  // recompute, unfused attention.
  const double L = 105, H = 20480, A = 128, S = 2048, V = 51200, B = 4, dp = 640;
  const ModelSpec m = gpt(int64_t(L), int64_t(H), int64_t(A), int64_t(S), int64_t(V));
  Strategy st;
  st.dp = int(dp);
  st.zero = 3;
  st.micro_batch = int64_t(B);
  st.global_batch = 2560;
  st.recompute = Recompute::Full;
  st.flash_attention = false;
  const MemoryBreakdown mem = compile(m, st).memory[0];
  const double P = total_parameters(m);
  EXPECT_TRUE(near_rel(P, 529.6e9, 1e-3)) << P;
  EXPECT_DOUBLE_EQ(mem.params, 2 * P / dp);
  EXPECT_DOUBLE_EQ(mem.grads, 4 * P / dp);
  EXPECT_DOUBLE_EQ(mem.optimizer, 12 * P / dp);
  // One layer's full activations while it is recomputed (Korthikanti), plus ZeRO-3's buffers:
  // fc1 (4h x h = 1.68e9 parameters, the largest tensor, above the 1e9 live limit) gathered
  // in fp16, its fp16 gradient, and the 5e8-element fp32 reduce bucket.
  const double recompute = S * B * H * (34 + 5 * A * S / H);
  const double fc1 = 4 * H * H;
  const double zero3 = 2 * std::max(1e9, fc1) + 2 * fc1 + 4 * 5e8;
  EXPECT_TRUE(near_rel(mem.temporary, recompute + zero3)) << mem.temporary << " vs " << recompute + zero3;
  EXPECT_TRUE(near_rel(zero3, 8.71e9, 1e-3)) << zero3;  // 8.1 GiB (it was 37.5 GiB)
  // Activations: one layer input per layer (2 s b h bytes), the embedding's dropout mask and
  // the output layer's inputs and fp32 logits.
  const double T = S * B;
  const double activations = L * 2 * T * H + T * H + (2 * T * H + 2 * T * H + 4 * T * V);
  EXPECT_TRUE(near_rel(mem.activations, activations)) << mem.activations << " vs " << activations;
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(mem.peak / gib, 72.45, 0.05);  // was 101.84 GiB
  EXPECT_NO_THROW(check_memory(compile(m, st), 80.0 * gib));
}

TEST(Zero3, AnUnsplitVocabularyIsGatheredWhole) {
  // A small model with a large vocabulary: the embedding's V x h weight is its largest tensor
  // (one nn.Embedding: gathered whole unless embedding TP splits it, V h / e per rank). Below
  // the live limit the gathered parameters are the unit in use and the prefetched next one:
  // here the two largest units are the embedding and a layer.
  const double H = 1024, V = 131072, S = 128;
  const ModelSpec m = gpt(2, int64_t(H), 8, int64_t(S), int64_t(V));
  for (int tp : {1, 2}) {
    Strategy st;
    st.dp = 4;
    st.tp = tp;
    st.zero = 3;
    st.flash_attention = false;
    const MemoryBreakdown mem = compile(m, st).memory[0];
    const double vocab = V * H / tp;                    // the rank's vocabulary matrix
    const double embedding_unit = vocab + S * H;        // with the learned positions
    const double layer_unit = (12 * H * H + 4 * H + 3 * H) / tp + 6 * H;  // TP-split + replicated
    const double stage = embedding_unit + 2 * layer_unit + 2 * H;  // + final norm (tied output)
    if (tp == 1) {
      ASSERT_TRUE(near_rel(stage, total_parameters(m)));
    }
    const double gathered = std::min(2 * embedding_unit, std::max(1e9, vocab));
    const double expected = 2 * gathered + 2 * vocab + 4 * std::min(5e8, stage);
    EXPECT_TRUE(near_rel(mem.temporary, expected)) << "tp " << tp << ": " << mem.temporary << " vs " << expected;
  }
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
