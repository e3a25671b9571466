// The strategy tree's embedding TP (embedding.tp = e dividing tp = t): the embedding, logits
// and loss run on t / e groups of e ranks inside each TP group, each group on T e / t tokens.
// Communicators, collectives and their sizes, memory per rank, FLOPs, the YAML tree and errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

// The ops of rank `rank`'s program by name.
std::multimap<std::string, Op> ops_by_name(const CompiledJob& c, int rank = 0) {
  std::multimap<std::string, Op> out;
  for (const Op& op : c.job.ranks[rank].program->ops) out.emplace(c.job.op_name(op), op);
  return out;
}

const Op& only(const std::multimap<std::string, Op>& ops, const std::string& name) {
  static const Op none;
  const auto n = ops.count(name);
  EXPECT_GE(n, 1u) << name;
  return n ? ops.find(name)->second : none;
}

const std::vector<int>& members(const CompiledJob& c, int rank, int slot) {
  return c.job.communicators[c.job.ranks[rank].communicators[slot]].ranks;
}

// GPT with 4 layers, hidden 256, 8 heads, seq 128, vocabulary 1024 (tied), one TP group of 4.
constexpr double H = 256, V = 1024, S = 128, L = 4;
ModelSpec small() { return gpt(4, 256, 8, 128, 1024); }
Strategy tp4(int embedding_tp, bool sp = false) {
  Strategy s;
  s.tp = 4;
  s.embedding_tp = embedding_tp;
  s.sequence_parallel = sp;
  return s;
}

TEST(EmbeddingTp, GroupsSplitEachTpGroup) {
  // tp 4, embedding.tp 2, dp 2, pp 3: rank = tp + 4 dp + 8 pp.
  const ModelSpec m = gpt(6, 256, 8, 128, 1024);
  Strategy s = tp4(2);
  s.pp = 3;
  s.dp = 2;
  const CompiledJob c = compile(m, s);
  ASSERT_GE(c.slots.embedding_tp, 0);
  ASSERT_GE(c.slots.embedding_replica, 0);
  EXPECT_NE(c.slots.embedding_tp, c.slots.tp);
  EXPECT_EQ(members(c, 1, c.slots.embedding_tp), (std::vector<int>{0, 1}));
  EXPECT_EQ(members(c, 1, c.slots.embedding_replica), (std::vector<int>{1, 3}));
  EXPECT_EQ(members(c, 6, c.slots.embedding_tp), (std::vector<int>{6, 7}));
  EXPECT_EQ(members(c, 6, c.slots.embedding_replica), (std::vector<int>{4, 6}));
  EXPECT_EQ(members(c, 17, c.slots.embedding_tp), (std::vector<int>{16, 17}));
  EXPECT_EQ(members(c, 17, c.slots.embedding), (std::vector<int>{1, 17}));
  // The vocabulary families hold the first and last stage only.
  EXPECT_EQ(c.job.ranks[9].communicators.size(), 2u);  // dp, tp
  EXPECT_EQ(c.job.ranks[1].communicators.size(), 5u);  // + embedding, embedding_tp, replica
  for (const Communicator& comm : c.job.communicators) {
    if (comm.name != "embedding_tp" && comm.name != "embedding_replica") continue;
    for (int r : comm.ranks) EXPECT_NE(c.stage_of_rank[r], 1) << comm.name;
  }
  EXPECT_NO_THROW(validate(c.job));

  // embedding.tp = tp is the default: no new communicators.
  const CompiledJob same = compile(m, [&] { Strategy t = s; t.embedding_tp = 4; return t; }());
  EXPECT_EQ(same.slots.embedding_tp, same.slots.tp);
  EXPECT_EQ(same.slots.embedding_replica, -1);
  // embedding.tp = 1: every TP rank holds the whole vocabulary; replicas are the TP group.
  const CompiledJob one = compile(m, [&] { Strategy t = s; t.embedding_tp = 1; return t; }());
  EXPECT_EQ(one.slots.embedding_tp, -1);
  EXPECT_EQ(members(one, 1, one.slots.embedding_replica), (std::vector<int>{0, 1, 2, 3}));
}

TEST(EmbeddingTp, CollectivesWithoutSequenceParallelism) {
  // T = 128 tokens, e = 2: each group of 2 ranks takes Te = 64 tokens; bf16 activations.
  const CompiledJob c = compile(small(), tp4(2));
  const auto ops = ops_by_name(c);
  const double Te = 64, T = 128, eb = 2;
  auto check = [&](const std::string& name, CollectiveKind kind, double bytes, int slot) {
    const Op& op = only(ops, name);
    EXPECT_EQ(op.kind, OpKind::Collective) << name;
    EXPECT_EQ(op.collective, kind) << name;
    EXPECT_EQ(op.message_bytes, uint64_t(bytes)) << name;
    EXPECT_EQ(op.slot, slot) << name;
  };
  const int emb = c.slots.embedding_tp, tp = c.slots.tp;
  // Lookup on the group's tokens, partial sums reduce-scattered in the group, all-gathered over
  // tp into the blocks' replicated layout.
  EXPECT_DOUBLE_EQ(only(ops, "embedding.lookup.fwd").flops, Te * H);
  check("embedding.embedding_reduce.fwd", CollectiveKind::ReduceScatter, Te * H * eb, emb);
  check("embedding.block_allgather.fwd", CollectiveKind::AllGather, T * H * eb, tp);
  EXPECT_EQ(ops.count("embedding.embedding_grad_allgather.bwd"), 0u);
  // Logits GEMM (Te, V/e, h), loss all-reduced in the group, input gradient back to the blocks.
  const Op& logits = only(ops, "output.logits.fwd");
  EXPECT_EQ(logits.gemm.m, 64);
  EXPECT_EQ(logits.gemm.n, 512);
  EXPECT_EQ(logits.gemm.k, 256);
  check("output.loss_allreduce.fwd", CollectiveKind::AllReduce, 12 * Te, emb);
  check("output.logits_grad_reduce.bwd", CollectiveKind::ReduceScatter, Te * H * eb, emb);
  check("output.block_allgather.bwd", CollectiveKind::AllGather, T * H * eb, tp);
  // The two copies of each vocabulary shard sum their gradients (fp32): V h / e parameters.
  check("embedding_replica_grads.allreduce", CollectiveKind::AllReduce, V * H / 2 * 4,
        c.slots.embedding_replica);
}

TEST(EmbeddingTp, CollectivesWithSequenceParallelism) {
  // The reduce-scatter in the group lands each rank's sequence shard: nothing to re-shard.
  const CompiledJob c = compile(small(), tp4(2, true));
  const auto ops = ops_by_name(c);
  const double Te = 64, eb = 2;
  const int emb = c.slots.embedding_tp;
  for (const char* name : {"embedding.embedding_reduce.fwd", "output.logits_grad_reduce.bwd"}) {
    EXPECT_EQ(only(ops, name).collective, CollectiveKind::ReduceScatter) << name;
    EXPECT_EQ(only(ops, name).message_bytes, uint64_t(Te * H * eb)) << name;
    EXPECT_EQ(only(ops, name).slot, emb) << name;
  }
  for (const char* name : {"output.logits_allgather.fwd", "output.logits_allgather.wgrad",
                           "embedding.embedding_grad_allgather.bwd"}) {
    EXPECT_EQ(only(ops, name).collective, CollectiveKind::AllGather) << name;
    EXPECT_EQ(only(ops, name).message_bytes, uint64_t(Te * H * eb)) << name;
    EXPECT_EQ(only(ops, name).slot, emb) << name;
  }
  EXPECT_EQ(ops.count("embedding.block_allgather.fwd") + ops.count("output.block_allgather.bwd"), 0u);

  // embedding.tp 1 with SP: each rank's sequence shard is its slice; no vocabulary collectives,
  // the whole vocabulary's gradient summed over the TP group.
  const CompiledJob one = compile(small(), tp4(1, true));
  for (const auto& [name, op] : ops_by_name(one)) {
    if (op.kind != OpKind::Collective) continue;
    EXPECT_TRUE(name.rfind("embedding.", 0) != 0 && name.rfind("output.", 0) != 0) << name;
  }
  const auto one_ops = ops_by_name(one);  // `only` returns a reference into it
  const Op& replica = only(one_ops, "embedding_replica_grads.allreduce");
  EXPECT_EQ(replica.message_bytes, uint64_t(V * H * 4));
  EXPECT_EQ(members(one, 0, replica.slot), (std::vector<int>{0, 1, 2, 3}));
}

TEST(EmbeddingTp, TiedEmbeddingAcrossStagesAndZeroShards) {
  Strategy s = tp4(2);
  s.pp = 2;
  s.dp = 2;
  s.zero = 1;
  const CompiledJob c = compile(small(), s);
  const int last = 8;  // tp 0, dp 0, pp 1
  ASSERT_EQ(c.stage_of_rank[last], 1);
  for (int rank : {0, last}) {
    const auto ops = ops_by_name(c, rank);
    // First and last stage's copies of the tied matrix: V h / e parameters each.
    EXPECT_EQ(only(ops, "embedding_grads.allreduce").message_bytes, uint64_t(V * H / 2 * 4));
    // ZeRO 1: the replicas sum the rank's dp shard of the gradient.
    EXPECT_EQ(only(ops, "embedding_replica_grads.allreduce").message_bytes,
              uint64_t(V * H / 2 * 4 / 2));
  }
  EXPECT_EQ(members(c, last, c.slots.embedding), (std::vector<int>{0, last}));
}

// Per rank, with the blocks' matrices split by t = 4 and the vocabulary matrix by e.
TEST(EmbeddingTp, MemoryPerRankMatchesTheFormula) {
  const double blocks_sharded = L * (12 * H * H + 3 * H + 4 * H);  // QKV, proj, MLP + biases
  const double replicated = L * (4 * H + 2 * H) + S * H + 2 * H;   // norms, biases, positions
  const ModelSpec m = small();
  for (bool sp : {false, true})
    for (int e : {1, 2, 4}) {
      SCOPED_TRACE("embedding.tp " + std::to_string(e) + " sp " + std::to_string(sp));
      const CompiledJob c = compile(m, tp4(e, sp));
      const double local = blocks_sharded / 4 + V * H / e + replicated;
      const MemoryBreakdown& mem = c.memory[3];
      EXPECT_DOUBLE_EQ(mem.params, 2 * local);
      EXPECT_DOUBLE_EQ(mem.grads, 4 * local);
      EXPECT_DOUBLE_EQ(mem.optimizer, 12 * local);
      // Activations (one micro-batch, one stage): the layers, the embedding's dropout mask, and
      // the output layer's norm input, logits input and fp32 logits of the group's Te tokens.
      const double T = S, Te = T * e / 4, Tr = sp ? T / 4 : T;
      const double layer = layer_activation_bytes(m, c.strategy);
      const double output = 2 * Tr * H + 2 * (sp ? T / 4 : Te) * H + 4 * Te * V / e;
      EXPECT_DOUBLE_EQ(mem.activations, L * layer + Tr * H + output);
      EXPECT_DOUBLE_EQ(mem.peak, mem.params + mem.grads + mem.optimizer + mem.activations +
                                     mem.temporary);
    }
}

TEST(EmbeddingTp, FlopsPerRankAndInTotal) {
  const ModelSpec m = small();
  Strategy single;
  single.global_batch = 2;
  const double total = compile(m, single).job.info.model_flops;
  for (bool sp : {false, true})
    for (int e : {1, 2, 4}) {
      Strategy s = tp4(e, sp);
      s.global_batch = 2;
      const CompiledJob c = compile(m, s);
      EXPECT_TRUE(near_rel(c.job.info.model_flops, total)) << e << " " << sp;
      // Each rank's logits GEMM: 2 (T e / t) (V / e) h = 2 T V h / t whatever e is.
      EXPECT_DOUBLE_EQ(only(ops_by_name(c), "output.logits.fwd").flops, 2 * S * V * H / 4);
      EXPECT_TRUE(run_timeline(c.job, [](const Job&, const Rank&, const Op&) { return 1.0; }).completed);
    }
}

TEST(EmbeddingTp, PadsTheVocabularyForItsOwnTp) {
  ModelSpec m = gpt(4, 256, 8, 128, 1000);
  Strategy s = tp4(2);
  EXPECT_EQ(resolve(m, s).padded_vocab, 1024);  // a multiple of 128 * 2
  s.embedding_tp = 0;
  EXPECT_EQ(resolve(m, s).padded_vocab, 1024);  // a multiple of 128 * 4
  m.vocab = 1100;
  s.embedding_tp = 1;
  EXPECT_EQ(resolve(m, s).padded_vocab, 1152);  // 9 * 128, where tp 4 would pad to 1536
}

TEST(EmbeddingTp, ImpossibleValuesNameThem) {
  const ModelSpec m = small();
  EXPECT_EQ(error_of([&] { resolve(m, tp4(3)); }),
            "invalid strategy: embedding.tp (3) does not divide tp (4): the embedding, logits and "
            "loss run on groups of embedding.tp ranks inside each TP group");
  EXPECT_EQ(error_of([&] { resolve(m, tp4(8)); }).rfind("invalid strategy: embedding.tp (8) does not divide tp (4)", 0), 0u);
  const ModelSpec short_seq = gpt(4, 256, 8, 6, 1024);
  EXPECT_EQ(error_of([&] { resolve(short_seq, tp4(1)); }),
            "invalid strategy: tp / embedding.tp (4 / 1 = 4) does not divide the tokens per "
            "micro-batch (6 = micro-batch * seq / cp): each embedding group takes an equal slice of "
            "them");
  Strategy generic;
  generic.embedding_tp = 2;
  EXPECT_EQ(error_of([&] { resolve(load_model("mlp-generic"), generic); }),
            "invalid strategy: model mlp-generic is a generic layer list: it has no embedding to "
            "split, got embedding.tp 2");
  Strategy s;
  EXPECT_EQ(error_of([&] { set_strategy_option(s, "embedding-tp", "0"); }),
            "--embedding-tp expects an integer in [1, 65536], got '0'");
}

TEST(EmbeddingTp, StrategyTreeInYaml) {
  const std::string path = ::testing::TempDir() + "/embedding-strategy.yaml";
  std::ofstream(path) << "tp: 4\nsequence-parallel: true\nembedding:\n  tp: 2\n";
  Strategy s;
  apply_strategy_file(s, path);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.embedding_tp, 2);
  std::ofstream(path) << "tp: 4\nembedding:\n  tp: two\n";
  EXPECT_EQ(error_of([&] { apply_strategy_file(s, path); }),
            path + ":3: key 'embedding.tp': --embedding-tp expects an integer in [1, 65536], got 'two'");
  std::ofstream(path) << "embedding: {tpp: 2}\n";
  EXPECT_EQ(error_of([&] { apply_strategy_file(s, path); }),
            path + ":1: key 'embedding.tpp': unknown strategy option 'embedding.tpp'");
  std::remove(path.c_str());

  // The model file's strategy section is the same tree; the flag spelling works too.
  const ModelSpec m = parse_model(
      "layers: 4\nhidden: 64\nheads: 4\nseq: 8\nvocab: 128\nstrategy:\n  tp: 4\n  embedding:\n    tp: 1\n",
      "m.yaml");
  EXPECT_EQ(default_strategy(m).embedding_tp, 1);
  set_strategy_option(s, "embedding_tp", "4");
  EXPECT_EQ(s.embedding_tp, 4);
}

}  // namespace
