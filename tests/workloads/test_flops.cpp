// FLOP accounting against Megatron's closed form (Narayanan et al. 2021, appendix):
// hardware FLOPs with full recompute 96 B s l h^2 (1 + s/6h + V/16lh), model FLOPs
// 72 B s l h^2 (1 + s/6h + V/12lh), for every way of splitting the model.
#include <gtest/gtest.h>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

struct Split {
  int tp, pp, dp, cp;
  bool sp;
  Schedule schedule;
  int vpp;
  bool flash;
};

class MegatronFlops : public ::testing::TestWithParam<Split> {};

TEST_P(MegatronFlops, FullRecomputeMatchesClosedForm) {
  const Split p = GetParam();
  // V = 4096 is a multiple of 128 * tp, so no vocabulary padding changes the formula.
  const ModelSpec m = gpt(16, 512, 16, 256, 4096);
  Strategy s;
  s.tp = p.tp;
  s.pp = p.pp;
  s.dp = p.dp;
  s.cp = p.cp;
  s.sequence_parallel = p.sp;
  s.schedule = p.schedule;
  s.vpp = p.vpp;
  s.flash_attention = p.flash;
  s.micro_batch = 2;
  s.global_batch = int64_t(p.dp) * 2 * 4 * p.pp;
  s.recompute = Recompute::Full;
  const CompiledJob c = compile(m, s);
  const double B = double(s.global_batch);
  EXPECT_TRUE(near_rel(c.job.info.hardware_flops, megatron_hardware_flops(B, 256, 16, 512, 4096)))
      << c.job.info.hardware_flops << " vs " << megatron_hardware_flops(B, 256, 16, 512, 4096);
  EXPECT_TRUE(near_rel(c.job.info.model_flops, megatron_model_flops(B, 256, 16, 512, 4096)))
      << c.job.info.model_flops << " vs " << megatron_model_flops(B, 256, 16, 512, 4096);

  // Without recompute the hardware does exactly the model FLOPs.
  s.recompute = Recompute::None;
  const CompiledJob plain = compile(m, s);
  EXPECT_TRUE(near_rel(plain.job.info.hardware_flops, megatron_model_flops(B, 256, 16, 512, 4096)));
  EXPECT_DOUBLE_EQ(plain.job.info.model_flops, plain.job.info.hardware_flops);
}

INSTANTIATE_TEST_SUITE_P(
    Splits, MegatronFlops,
    ::testing::Values(Split{1, 1, 1, 1, false, Schedule::OneFOneB, 1, true},
                      Split{8, 1, 1, 1, false, Schedule::OneFOneB, 1, false},
                      Split{4, 1, 2, 1, true, Schedule::OneFOneB, 1, true},
                      Split{2, 4, 2, 1, true, Schedule::OneFOneB, 1, true},
                      Split{2, 4, 1, 1, false, Schedule::GPipe, 1, false},
                      Split{2, 2, 2, 2, true, Schedule::Interleaved, 2, true},
                      Split{1, 4, 1, 2, false, Schedule::Interleaved, 4, false},
                      Split{4, 2, 4, 2, true, Schedule::OneFOneB, 1, true}));

TEST(MegatronFlops, Gpt3_175bOn1024Gpus) {
  ModelSpec m = load_model("gpt3-175b");
  Strategy s = default_strategy(m);
  s.tp = 8;
  s.pp = 16;
  s.dp = 8;
  s.global_batch = 1536;
  s.micro_batch = 1;
  s.schedule = Schedule::Interleaved;
  s.vpp = 2;
  s.recompute = Recompute::Full;
  const CompiledJob c = compile(m, s, 1024);
  EXPECT_EQ(c.strategy.padded_vocab, 51200);  // 50257 padded to a multiple of 128 * 8
  EXPECT_TRUE(near_rel(c.job.info.hardware_flops, megatron_hardware_flops(1536, 2048, 96, 12288, 51200)));
  EXPECT_TRUE(near_rel(c.job.info.model_flops, megatron_model_flops(1536, 2048, 96, 12288, 51200)));
}

TEST(MegatronFlops, SelectiveRecomputeAddsOnlyTheAttentionCore) {
  // Unfused attention: selective recompute re-runs QK^T and attention-over-values, 4 B s^2 h
  // per layer.
  const ModelSpec m = gpt(8, 256, 8, 128, 1024);
  Strategy s;
  s.tp = 2;
  s.global_batch = 4;
  s.micro_batch = 2;
  s.dp = 2;
  s.flash_attention = false;
  s.recompute = Recompute::Selective;
  const CompiledJob c = compile(m, s);
  const double extra = 8 * 4.0 * 4 * 128.0 * 128.0 * 256.0;
  EXPECT_TRUE(near_rel(c.job.info.hardware_flops - c.job.info.model_flops, extra));
}

TEST(Throughput, ReportFigures) {
  IterationInfo info;
  info.model_flops = 8e15;
  info.hardware_flops = 1e16;
  const Throughput t = throughput(info, 8, 10.0, 312e12);
  EXPECT_DOUBLE_EQ(t.model_tflops_per_gpu, 100.0);
  EXPECT_DOUBLE_EQ(t.hardware_tflops_per_gpu, 125.0);
  EXPECT_DOUBLE_EQ(t.mfu, 100.0 / 312.0);
}

}  // namespace
