// Framework profiles: loading, strategy defaults, and the kernels the compiler emits for them
// (fusions, gradient accumulation, the optimizer's framework kernels, pipeline transfers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_helpers.h"
#include "workloads/framework.h"

namespace tessera::workloads {
namespace {

using testing::gpt;

const Op* find_op(const Job& job, const Program& p, const std::string& name) {
  for (const Op& op : p.ops)
    if (job.op_name(op) == name) return &op;
  return nullptr;
}

CompiledJob compile_with(const std::string& framework_name, Strategy s, DType dtype = DType::FP16) {
  const Framework f = load_framework(framework_name);
  s.dtype = dtype;
  return compile(gpt(2, 1024, 16, 512, 1024), s, 0, f);
}

std::string write_framework(const std::string& text) { return testing::write_temp_file("tessera_fw_test.yaml", text); }

TEST(Framework, ShippedProfilesLoad) {
  const Framework old = load_framework("megatron-2021");
  EXPECT_EQ(old.name, "megatron-2021");
  EXPECT_FALSE(old.overlap_grad_reduce);
  EXPECT_FALSE(old.flash_attention);
  EXPECT_TRUE(old.synchronous_p2p);
  EXPECT_TRUE(old.p2p_scatter_gather);
  EXPECT_FALSE(old.fused_grad_accumulation);
  EXPECT_DOUBLE_EQ(old.host_launch_us, 10.0);
  const Framework eager = load_framework("pytorch-eager");
  EXPECT_FALSE(eager.fused_softmax);
  EXPECT_FALSE(eager.fused_bias_activation);
  EXPECT_FALSE(eager.fused_bias_dropout_add);
  EXPECT_TRUE(load_framework("megatron-core").overlap_grad_reduce);
  const auto names = list_frameworks();
  EXPECT_NE(std::find(names.begin(), names.end(), "megatron-core"), names.end());
}

TEST(Framework, BadProfilesNameFileLineAndKey) {
  try {
    load_framework("megatron-1999");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("megatron-2021, megatron-core"), std::string::npos) << e.what();
  }
  const std::string typo = write_framework("name: x\nfused_sofmax: true\n");
  try {
    load_framework(typo);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(typo + ":2: unknown key 'fused_sofmax'"), std::string::npos) << e.what();
  }
  const std::string negative = write_framework("host_launch_us: -3\n");
  try {
    load_framework(negative);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: key 'host_launch_us'"), std::string::npos) << e.what();
  }
}

TEST(Framework, StrategyDefaultsComeBeforeTheModelFileAndFlags) {
  const Framework old = load_framework("megatron-2021");
  ModelSpec m = gpt(2, 1024, 16, 512, 1024);
  Strategy s = default_strategy(m, &old);
  EXPECT_FALSE(s.flash_attention);
  EXPECT_FALSE(s.overlap_grad_reduce);
  set_strategy_option(s, "attention", "flash");
  EXPECT_TRUE(s.flash_attention);
  EXPECT_TRUE(default_strategy(m).flash_attention);  // without a framework: the built-in default
}

TEST(Framework, UnfusedKernelsAreMoreKernelsAndMoreBytes) {
  Strategy s;
  s.flash_attention = false;
  const CompiledJob fused = compile_with("megatron-core", s);
  const CompiledJob eager = compile_with("pytorch-eager", s);
  for (const char* name : {"layer0.softmax.fwd", "layer0.mlp_act.fwd", "layer0.attn_residual.fwd"}) {
    const Op* a = find_op(fused.job, *fused.job.ranks[0].program, name);
    const Op* b = find_op(eager.job, *eager.job.ranks[0].program, name);
    ASSERT_TRUE(a && b) << name;
    EXPECT_EQ(a->kernels, 1) << name;
    EXPECT_GT(b->kernels, 1) << name;
    EXPECT_GT(b->bytes, a->bytes) << name;
    EXPECT_EQ(a->elements, b->elements) << name;
  }
  // Unfused scale, mask and softmax read and write the scores three times.
  EXPECT_DOUBLE_EQ(find_op(eager.job, *eager.job.ranks[0].program, "layer0.softmax.fwd")->bytes,
                   3 * find_op(fused.job, *fused.job.ranks[0].program, "layer0.softmax.fwd")->bytes);
}

TEST(Framework, AttentionGemmsHaveTheirBatchedShapes) {
  Strategy s;
  s.flash_attention = false;
  s.micro_batch = 2;
  const CompiledJob c = compile_with("megatron-core", s);
  const Program& p = *c.job.ranks[0].program;
  const Op* scores = find_op(c.job, p, "layer0.attn_scores.fwd");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->kernel, KernelKind::AttentionGemm);
  EXPECT_EQ(scores->gemm.batch, 2 * 16);  // micro-batch x heads
  EXPECT_EQ(scores->gemm.m, 512);
  EXPECT_EQ(scores->gemm.n, 512);
  EXPECT_EQ(scores->gemm.k, 1024 / 16);
  EXPECT_DOUBLE_EQ(scores->flops, 2.0 * 2 * 16 * 512 * 512 * 64);
  EXPECT_EQ(find_op(c.job, p, "layer0.qkv.fwd")->kernel, KernelKind::Gemm);
  EXPECT_EQ(find_op(c.job, p, "layer0.attn_norm.fwd")->kernel, KernelKind::Norm);
}

TEST(Framework, UnfusedGradientAccumulationFollowsEveryWeightGradient) {
  Strategy s;
  const CompiledJob old = compile_with("megatron-2021", s);
  const CompiledJob core = compile_with("megatron-core", s);
  const Program& p = *old.job.ranks[0].program;
  int wgrads = 0, accumulates = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Compute) continue;
    if (op.phase == ComputePhase::BackwardWeight && op.kernel == KernelKind::Gemm) ++wgrads;
    const std::string& n = old.job.op_name(op);
    if (n.size() > 11 && n.compare(n.size() - 11, 11, ".accumulate") == 0) {
      ++accumulates;
      // fp16 gradient read, fp32 main gradient read and written.
      EXPECT_DOUBLE_EQ(op.bytes, op.elements * (2.0 + 2 * 4.0)) << n;
    }
  }
  EXPECT_GT(wgrads, 0);
  EXPECT_EQ(accumulates, wgrads);
  for (const Op& op : core.job.ranks[0].program->ops)
    EXPECT_EQ(core.job.op_name(op).find(".accumulate"), std::string::npos);
}

// The compute ops of rank 0 whose name ends with `suffix`.
std::vector<const Op*> ops_ending(const CompiledJob& c, const std::string& suffix) {
  std::vector<const Op*> found;
  for (const Op& op : c.job.ranks[0].program->ops) {
    const std::string& n = c.job.op_name(op);
    if (op.kind == OpKind::Compute && n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      found.push_back(&op);
  }
  return found;
}

TEST(Framework, BiasGradientsAreReductionsReadingTheOutputGradientOnce) {
  Strategy s;
  const CompiledJob old = compile_with("megatron-2021", s);
  const CompiledJob core = compile_with("megatron-core", s);
  const CompiledJob eager = compile_with("pytorch-eager", s);
  // Biases applied in bias-activation and bias-dropout-add: a reduction in every framework, one
  // per layer (gpt(): 2 layers, hidden 1024, seq 512, micro-batch 1, fp16).
  for (const CompiledJob* c : {&old, &core, &eager})
    for (const char* bias : {"mlp_fc1_bias.wgrad", "attn_proj_bias.wgrad", "mlp_fc2_bias.wgrad"}) {
      const auto found = ops_ending(*c, bias);
      ASSERT_EQ(found.size(), 2u) << bias;
      EXPECT_EQ(found[0]->phase, ComputePhase::BackwardWeight);
      EXPECT_DOUBLE_EQ(found[0]->bytes, 2.0 * double(found[0]->elements)) << bias;
    }
  EXPECT_EQ(ops_ending(old, "attn_proj_bias.wgrad")[0]->elements, 512 * 1024);
  EXPECT_EQ(ops_ending(old, "mlp_fc1_bias.wgrad")[0]->elements, 512 * 4096);
  // QKV's own bias: added after the GEMM and reduced by Megatron-LM 2021; its gradient reduced
  // by plain PyTorch; both in the GEMM epilogues of Megatron-Core.
  ASSERT_EQ(ops_ending(old, "qkv_bias.fwd").size(), 2u);
  EXPECT_DOUBLE_EQ(ops_ending(old, "qkv_bias.fwd")[0]->bytes, 2.0 * 2.0 * 512 * 3072);
  EXPECT_EQ(ops_ending(old, "qkv_bias.wgrad").size(), 2u);
  EXPECT_EQ(ops_ending(eager, "qkv_bias.fwd").size(), 0u);
  EXPECT_EQ(ops_ending(eager, "qkv_bias.wgrad").size(), 2u);
  EXPECT_EQ(ops_ending(core, "qkv_bias.fwd").size() + ops_ending(core, "qkv_bias.wgrad").size(), 0u);
  // A model without biases has no bias kernels at all.
  ModelSpec llama = gpt(2, 1024, 16, 512, 1024);
  llama.bias = false;
  const CompiledJob none = compile(llama, s, 0, load_framework("megatron-2021"));
  for (const Op& op : none.job.ranks[0].program->ops)
    EXPECT_EQ(none.job.op_name(op).find("_bias."), std::string::npos) << none.job.op_name(op);
}

TEST(Framework, TwoPassLayerNormBackwardReadsItsTensorsTwice) {
  Strategy s;
  const double n = 512.0 * 1024, eb = 2;
  const CompiledJob old = compile_with("megatron-2021", s), core = compile_with("megatron-core", s);
  const auto two = ops_ending(old, "attn_norm.bwd");
  const auto one = ops_ending(core, "attn_norm.bwd");
  ASSERT_FALSE(two.empty());
  ASSERT_FALSE(one.empty());
  EXPECT_DOUBLE_EQ(two[0]->bytes, 5 * n * eb);  // dY and X read twice, dX written
  EXPECT_EQ(two[0]->kernels, 3);
  EXPECT_DOUBLE_EQ(one[0]->bytes, 3 * n * eb);
  EXPECT_EQ(one[0]->kernels, 1);
  try {
    load_framework(write_framework("norm_backward_passes: 3\n"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: key 'norm_backward_passes'"), std::string::npos) << e.what();
  }
}

TEST(Framework, LossScalingOnlyForFp16AndGradientNormWithClipping) {
  Strategy s;
  const CompiledJob fp16 = compile_with("megatron-core", s, DType::FP16);
  const CompiledJob bf16 = compile_with("megatron-core", s, DType::BF16);
  EXPECT_NE(find_op(fp16.job, *fp16.job.ranks[0].program, "optimizer.unscale_and_check"), nullptr);
  EXPECT_EQ(find_op(bf16.job, *bf16.job.ranks[0].program, "optimizer.unscale_and_check"), nullptr);
  const Op* norm = find_op(bf16.job, *bf16.job.ranks[0].program, "optimizer.grad_norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->kernel, KernelKind::Framework);
  const Op* adam = find_op(bf16.job, *bf16.job.ranks[0].program, "optimizer.adam");
  EXPECT_DOUBLE_EQ(norm->bytes, 4.0 * adam->elements);  // one fp32 read of every gradient
}

TEST(Framework, ScatterGatherAndSynchronousPipelineTransfers) {
  Strategy s;
  s.tp = 2;
  s.pp = 2;
  s.micro_batch = 1;
  s.global_batch = 2;
  const CompiledJob old = compile_with("megatron-2021", s);
  const CompiledJob core = compile_with("megatron-core", s);
  const double tensor = 512.0 * 1024 * 2;  // tokens x hidden x fp16
  const Program& p = *old.job.ranks[0].program;  // first stage: sends activations
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind != OpKind::Send) continue;
    EXPECT_EQ(p.ops[i].message_bytes, uint64_t(tensor / 2));  // each TP rank sends its half
    // The next kernel waits for the send (batch_isend_irecv, wait, synchronize).
    for (size_t j = i + 1; j < p.ops.size(); ++j)
      if (p.ops[j].kind == OpKind::Compute) {
        EXPECT_NE(std::find(p.ops[j].deps.begin(), p.ops[j].deps.end(), OpId(i)), p.ops[j].deps.end());
        break;
      }
  }
  const Program& last = *old.job.ranks.back().program;  // last stage: receives, then gathers
  bool gathered = false;
  for (const Op& op : last.ops)
    if (old.job.op_name(op) == "pp.gather_slices") {
      gathered = true;
      EXPECT_EQ(op.collective, CollectiveKind::AllGather);
      EXPECT_EQ(op.message_bytes, uint64_t(tensor));
      EXPECT_EQ(last.ops[op.deps[0]].kind, OpKind::Recv);
    }
  EXPECT_TRUE(gathered);
  for (const Op& op : core.job.ranks[0].program->ops)
    if (op.kind == OpKind::Send) {
      EXPECT_EQ(op.message_bytes, uint64_t(tensor));
    }
}

}  // namespace
}  // namespace tessera::workloads
