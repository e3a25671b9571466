// Model files, overrides and strategy errors: bad input gets one line naming the file, line and
// key, or the values that do not fit.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

TEST(Zoo, EveryModelLoadsWithItsSize) {
  const std::map<std::string, double> billions = {
      {"gpt3-1.3b", 1.3},   {"gpt3-13b", 12.9},   {"gpt3-175b", 174.6}, {"llama2-7b", 6.74},
      {"llama2-70b", 69.0}, {"llama3-8b", 8.03},  {"llama3-70b", 70.6}, {"llama3-405b", 405.8},
      {"mixtral-8x7b", 46.7},
      {"bert-large", 0.334}, {"megatron-1t", 1008.0}};
  const std::vector<ZooEntry> zoo = list_models();
  EXPECT_GE(zoo.size(), billions.size() + 2);
  for (const ZooEntry& e : zoo) {
    EXPECT_FALSE(e.description.empty()) << e.name;
    const ModelSpec m = load_model(e.name);
    auto it = billions.find(e.name);
    if (it == billions.end()) continue;
    EXPECT_NEAR(total_parameters(m) / 1e9, it->second, 0.02 * it->second) << e.name;
  }
}

TEST(Zoo, ArchitectureDefaults) {
  const ModelSpec llama = load_model("llama3-8b");
  EXPECT_EQ(llama.norm, NormKind::RMSNorm);
  EXPECT_EQ(llama.mlp, MlpKind::SwiGLU);
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_FALSE(llama.tied_embeddings);
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.top_k, 2);
  const ModelSpec mlp = load_model("mlp-generic");
  EXPECT_TRUE(mlp.is_generic());
  EXPECT_EQ(mlp.layers, 18);
}

TEST(Overrides, CommandLineWins) {
  ModelSpec m = load_model("megatron-gpt");
  ModelOverrides o;
  set_model_override(o, "layers", "32");
  set_model_override(o, "hidden", "4096");
  set_model_override(o, "heads", "32");
  set_model_override(o, "kv-heads", "8");
  set_model_override(o, "seq", "4096");
  apply_overrides(m, o);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.seq_length, 4096);
  EXPECT_EQ(error_of([&] { set_model_override(o, "layers", "12x"); }),
            "--layers expects an integer, got '12x'");
  ModelOverrides bad;
  bad.heads = 30;
  EXPECT_EQ(error_of([&] { apply_overrides(m, bad); }),
            "--heads: heads (30) must divide hidden (4096)");
}

TEST(YamlErrors, UnknownKeyNamesFileLineAndKey) {
  const std::string text = "name: x\nlayers: 2\nhiden: 64\nheads: 2\nseq: 8\nvocab: 16\n";
  EXPECT_EQ(error_of([&] { parse_model(text, "my.yaml"); }), "my.yaml:3: unknown key 'hiden' in model");
}

TEST(YamlErrors, BadValueNamesFileLineAndKey) {
  const std::string text = "name: x\nlayers: two\nhidden: 64\nheads: 2\nseq: 8\nvocab: 16\n";
  EXPECT_EQ(error_of([&] { parse_model(text, "my.yaml"); }),
            "my.yaml:2: key 'layers': expected an integer, got 'two'");
  const std::string arch = "architecture: gtp\nlayers: 2\n";
  EXPECT_EQ(error_of([&] { parse_model(arch, "a.yaml"); }),
            "a.yaml:1: key 'architecture': unknown value 'gtp' (expected gpt|llama|bert|generic)");
}

TEST(YamlErrors, SyntaxErrorAndMissingFile) {
  EXPECT_EQ(error_of([&] { parse_model("layers: [1, 2\n", "s.yaml"); }).rfind("s.yaml:", 0), 0u);
  EXPECT_EQ(error_of([&] { load_model("/nonexistent/m.yaml"); }), "/nonexistent/m.yaml: cannot read (no such file)");
  EXPECT_EQ(error_of([&] { load_model("gpt5"); }).rfind("unknown model 'gpt5' (the zoo has: ", 0), 0u);
}

// An alias inside the node it names is a cycle that yaml-cpp builds and every reader would
// follow for ever (a fuzzer's find: the process overflowed its stack); so is nesting without end.
TEST(YamlErrors, AnAliasInsideItsOwnNodeOrDeepNestingIsRefused) {
  EXPECT_EQ(error_of([&] { parse_model("na: &lama2\n- - xn m'e: *lama2\n- - 2-b\n", "m.yaml"); }),
            "m.yaml:1: key 'na[0][0].xn m'e': an alias inside the node it names");
  std::string deep = "layers: ";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  EXPECT_EQ(error_of([&] { parse_model(deep + "\n", "d.yaml"); }).rfind("d.yaml:1: key 'layers", 0), 0u);
  EXPECT_NE(error_of([&] { parse_model(deep + "\n", "d.yaml"); }).find("nested more than 64 levels deep"),
            std::string::npos);
  // Aliases that repeat a list twice over, 30 times: 2^30 lists to read.
  std::string laughs = "a0: &a0 [x, x]\n";
  for (int i = 1; i <= 30; ++i)
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
              std::to_string(i - 1) + "]\n";
  EXPECT_NE(error_of([&] { parse_model(laughs, "l.yaml"); }).find("more than 1000000 mappings and lists"),
            std::string::npos);
}

TEST(YamlErrors, StrategySectionIsCheckedToo) {
  const std::string text =
      "layers: 4\nhidden: 64\nheads: 4\nseq: 8\nvocab: 128\nstrategy:\n  tp: 2\n  schedul: 1f1b\n";
  const ModelSpec m = parse_model(text, "m.yaml");
  EXPECT_EQ(error_of([&] { default_strategy(m); }),
            "m.yaml:8: key 'schedul': unknown strategy option 'schedul'");
}

TEST(StrategyTree, ModelFileSetsStageLayers) {
  const std::string text =
      "layers: 10\nhidden: 64\nheads: 4\nseq: 8\nvocab: 128\n"
      "strategy:\n  pp: 4\n  stage-layers: [2, 3, 3, 2]\n";
  const ModelSpec m = parse_model(text, "m.yaml");
  const Strategy s = default_strategy(m);
  const ResolvedStrategy r = resolve(m, s);
  EXPECT_EQ(r.stage_layers, (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_EQ(r.stage_first_layer, (std::vector<int64_t>{0, 2, 5, 8}));
  const CompiledJob c = compile(m, s);
  EXPECT_TRUE(run_timeline(c.job, [](const Job&, const Rank&, const Op&) { return 1.0; }).completed);
}

TEST(StrategyTree, FirstAndLastStageOneLayerFewer) {
  ModelSpec m = gpt(30, 256, 8, 64, 1024);
  Strategy s;
  s.pp = 4;
  s.first_stage_layers = 7;
  s.last_stage_layers = 7;
  EXPECT_EQ(resolve(m, s).stage_layers, (std::vector<int64_t>{7, 8, 8, 7}));
}

TEST(StrategyErrors, ImpossibleStrategiesNameTheValues) {
  ModelSpec m = gpt(24, 2048, 16, 2048, 51200);
  auto err = [&](std::function<void(Strategy&)> set, int gpus = 0) {
    Strategy s;
    set(s);
    return error_of([&] { resolve(m, s, gpus); });
  };
  EXPECT_EQ(err([](Strategy& s) { s.tp = 3; }), "invalid strategy: tp (3) does not divide heads (16)");
  EXPECT_EQ(err([](Strategy& s) { s.tp = 2; s.pp = 2; s.dp = 2; }, 16),
            "invalid strategy: dp * tp * pp * cp (2 * 2 * 2 * 1 = 8) != 16 GPUs");
  EXPECT_EQ(err([](Strategy& s) { s.dp = 4; s.micro_batch = 2; s.global_batch = 12; }),
            "invalid strategy: global-batch (12) is not divisible by dp * micro-batch (4 * 2)");
  EXPECT_EQ(err([](Strategy& s) {
              s.pp = 4;
              s.vpp = 4;
              s.schedule = Schedule::Interleaved;
              s.global_batch = 4;
            }),
            "invalid strategy: vpp (4) does not divide the layers per stage (6 = 24 layers / pp 4)");
  EXPECT_EQ(err([](Strategy& s) { s.pp = 5; }), "invalid strategy: pp (5) does not divide layers (24)");
  EXPECT_EQ(err([](Strategy& s) { s.tp = 8; s.pp = 4; }, 12),
            "invalid strategy: tp * pp * cp (8 * 4 * 1 = 32) does not divide the 12 GPUs");
}

// A GEMM's dimensions are held in 32 bits: a micro-batch of more tokens than that is refused,
// naming the GEMM, never truncated.
TEST(StrategyErrors, AGemmPastThirtyTwoBitsIsRefused) {
  const ModelSpec m = gpt(2, 256, 4, 4096, 1024);
  Strategy s;
  s.micro_batch = 1 << 20;  // 2^20 samples of 4,096 tokens: 2^32 rows
  s.global_batch = s.micro_batch;
  const std::string e = error_of([&] { compile(m, s); });
  EXPECT_NE(e.find("GEMM '"), std::string::npos) << e;
  EXPECT_NE(e.find(" x 4294967296 x "), std::string::npos) << e;
  EXPECT_NE(e.find("go up to 2^31 - 1"), std::string::npos) << e;
  s.micro_batch = s.global_batch = 1 << 17;  // 2^29 rows: fits
  EXPECT_EQ(error_of([&] { compile(m, s); }), "(no error)");
}

TEST(StrategyOptions, ParseFlags) {
  Strategy s;
  set_strategy_option(s, "tp", "8");
  set_strategy_option(s, "sequence-parallel", "");
  set_strategy_option(s, "schedule", "interleaved");
  set_strategy_option(s, "vpp", "2");
  set_strategy_option(s, "recompute", "selective");
  set_strategy_option(s, "zero", "3");
  set_strategy_option(s, "rank-order", "tp-dp-cp-ep-pp");
  set_strategy_option(s, "dtype", "fp16");
  set_strategy_option(s, "bucket_mb", "40");
  EXPECT_EQ(s.tp, 8);
  EXPECT_TRUE(s.sequence_parallel);
  EXPECT_EQ(s.schedule, Schedule::Interleaved);
  EXPECT_EQ(s.recompute, Recompute::Selective);
  EXPECT_EQ(s.zero, 3);
  EXPECT_EQ(s.rank_order[1], Axis::DP);
  EXPECT_EQ(s.dtype, DType::FP16);
  EXPECT_DOUBLE_EQ(s.bucket_mb, 40.0);
  EXPECT_EQ(error_of([&] { set_strategy_option(s, "zero", "4"); }), "--zero expects 0, 1, 2 or 3, got '4'");
  EXPECT_EQ(error_of([&] { set_strategy_option(s, "schedule", "zb"); }),
            "--schedule expects gpipe, 1f1b or interleaved, got 'zb'");
  EXPECT_EQ(error_of([&] { set_strategy_option(s, "tpp", "2"); }), "unknown strategy option 'tpp'");
  EXPECT_GE(strategy_options().size(), 20u);
}

TEST(StrategyFile, AppliesKeys) {
  const std::string path = ::testing::TempDir() + "/strategy.yaml";
  std::ofstream(path) << "tp: 4\npp: 2\nschedule: gpipe\nrecompute: full\n";
  Strategy s;
  apply_strategy_file(s, path);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.schedule, Schedule::GPipe);
  std::ofstream(path) << "tp: 4\npp: two\n";
  EXPECT_EQ(error_of([&] { apply_strategy_file(s, path); }),
            path + ":2: key 'pp': --pp expects an integer in [1, 65536], got 'two'");
  std::remove(path.c_str());
}

}  // namespace

// Programs are checked side by side; an error is told as checking rank by rank would: at the
// first rank that runs the program, after the ranks before it.
TEST(JobErrors, AProgramsErrorIsToldAtTheFirstRankThatRunsIt) {
  Job job;
  job.stream_names = {"compute"};
  job.names = {"op"};
  auto program = [](std::vector<DepList> deps) {
    auto p = std::make_shared<Program>();
    for (DepList& d : deps) {
      Op op;
      op.deps = std::move(d);
      p->ops.push_back(std::move(op));
    }
    return std::shared_ptr<const Program>(p);
  };
  const auto good = program({{}, {0}});
  const auto wrong = program({{}, {1}});  // op 1 waits for itself
  for (int r = 0; r < 3; ++r) {
    job.ranks.emplace_back();
    job.ranks.back().rank = r;
    job.ranks.back().program = r == 0 ? good : wrong;
  }
  auto error = [&] {
    try {
      validate(job);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(), "invalid job: rank 1 op 1 depends on a later op 1");
  job.ranks[0].peers = {0};  // rank 0 is wrong too, and comes first
  EXPECT_EQ(error(), "invalid job: rank 0 maps a slot to peer 0");
  job.ranks[0].peers.clear();
  job.ranks[0].program = wrong;
  EXPECT_EQ(error(), "invalid job: rank 0 op 1 depends on a later op 1");
}
