// Property test over many random valid strategies: every send has its receive, every member
// of a communicator issues the same collectives with the same sizes, the programs run to the
// end, and the total FLOPs do not depend on the strategy.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

ModelSpec test_model(int which) {
  ModelSpec m = gpt(8, 256, 8, 64, 1024);
  if (which == 1) {  // Llama-style: GQA, SwiGLU, RMSNorm, rotary, untied
    m.architecture = Architecture::Llama;
    m.kv_heads = 4;
    m.ffn_hidden = 688;
    m.norm = NormKind::RMSNorm;
    m.mlp = MlpKind::SwiGLU;
    m.position = PositionKind::Rotary;
    m.bias = m.dropout = m.tied_embeddings = false;
  } else if (which == 2) {  // MoE
    m.experts = 4;
    m.top_k = 2;
  }
  return m;
}

template <typename T>
T pick(std::mt19937& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

// Draws strategies until one resolves; returns it.
Strategy random_strategy(std::mt19937& rng, const ModelSpec& m) {
  for (;;) {
    Strategy s;
    s.tp = pick(rng, {1, 2, 4});
    s.embedding_tp = pick(rng, {0, 0, 1, 2, 4});  // 0: tp; resolve rejects those not dividing tp
    s.pp = pick(rng, {1, 2, 4});
    s.cp = pick(rng, {1, 2});
    s.dp = pick(rng, {1, 2, 4});
    s.ep = m.is_moe() ? pick(rng, {1, 2, 4}) : 1;
    s.sequence_parallel = pick(rng, {false, true}) || (m.is_moe() && s.tp > 1);
    s.zero = pick(rng, {0, 1, 2, 3});
    s.micro_batch = pick(rng, {1, 2});
    s.schedule = pick(rng, {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved});
    s.vpp = s.schedule == Schedule::Interleaved ? pick(rng, {2, 4}) : 1;
    const int64_t m_per = s.schedule == Schedule::Interleaved ? s.pp * pick(rng, {1, 2})
                                                               : pick(rng, {1, 2, 3, 5});
    s.global_batch = m_per * s.dp * s.micro_batch;
    s.recompute = pick(rng, {Recompute::None, Recompute::Selective, Recompute::Full});
    s.flash_attention = pick(rng, {false, true});
    s.overlap_grad_reduce = pick(rng, {false, true});
    s.overlap_param_gather = pick(rng, {false, true});
    s.tp_comm_overlap = pick(rng, {false, true});
    s.bucket_mb = pick(rng, {0.05, 0.5, 25.0});
    std::array<Axis, 5> order = {Axis::TP, Axis::CP, Axis::EP, Axis::DP, Axis::PP};
    std::shuffle(order.begin(), order.end(), rng);
    s.rank_order = pick(rng, {true, false}) ? order : Strategy{}.rank_order;
    try {
      resolve(m, s);
      return s;
    } catch (const InputError&) {
    }
  }
}

std::string describe(const Strategy& s) {
  std::string order;
  for (Axis a : s.rank_order) order += std::string(to_string(a)) + "-";
  return "tp " + std::to_string(s.tp) + " embedding.tp " + std::to_string(s.embedding_tp) +
         " pp " + std::to_string(s.pp) + " cp " +
         std::to_string(s.cp) + " dp " + std::to_string(s.dp) + " ep " + std::to_string(s.ep) +
         " sp " + std::to_string(s.sequence_parallel) + " zero " + std::to_string(s.zero) +
         " " + to_string(s.schedule) + " vpp " + std::to_string(s.vpp) + " " +
         to_string(s.recompute) + " flash " + std::to_string(s.flash_attention) + " gb " +
         std::to_string(s.global_batch) + " mb " + std::to_string(s.micro_batch) + " order " + order;
}

TEST(Property, RandomStrategies) {
  std::mt19937 rng(20240611);
  int own_embedding_tp = 0;  // trials where the embedding has a smaller TP than the blocks
  for (int trial = 0; trial < 90; ++trial) {
    const ModelSpec m = test_model(trial % 3);
    const Strategy s = random_strategy(rng, m);
    SCOPED_TRACE("model " + std::to_string(trial % 3) + ": " + describe(s));
    const CompiledJob c = compile(m, s);
    const Job& job = c.job;
    ASSERT_NO_THROW(validate(job));
    own_embedding_tp += c.strategy.embedding_tp < s.tp;

    // Every send has its receive: same (source, destination, tag, bytes) on both sides.
    std::map<std::tuple<int, int, uint32_t, uint64_t>, int> messages;
    // Every member of a communicator issues the same collectives in the same order.
    std::map<int, std::map<int, std::vector<std::pair<CollectiveKind, uint64_t>>>> issued;
    for (const Rank& rank : job.ranks) {
      for (const Op& op : rank.program->ops) {
        if (op.kind == OpKind::Send) ++messages[{rank.rank, rank.peers[op.slot], op.tag, op.message_bytes}];
        if (op.kind == OpKind::Recv) --messages[{rank.peers[op.slot], rank.rank, op.tag, op.message_bytes}];
        if (op.kind == OpKind::Collective)
          issued[rank.communicators[op.slot]][rank.rank].emplace_back(op.collective, op.message_bytes);
      }
    }
    for (const auto& [key, balance] : messages)
      ASSERT_EQ(balance, 0) << "unmatched message " << std::get<0>(key) << " -> " << std::get<1>(key)
                            << " tag " << std::get<2>(key);
    for (const auto& [comm, by_rank] : issued) {
      const auto& members = job.communicators[comm].ranks;
      ASSERT_EQ(by_rank.size(), members.size()) << "communicator " << job.communicators[comm].name;
      for (const auto& [rank, sequence] : by_rank)
        ASSERT_EQ(sequence, by_rank.begin()->second)
            << "rank " << rank << " on " << job.communicators[comm].name;
    }

    // It runs to the end.
    const TimelineResult run = run_timeline(
        job, [](const Job&, const Rank&, const Op& op) { return op.kind == OpKind::Compute ? 1.0 : 0.5; });
    ASSERT_TRUE(run.completed) << run.deadlock;

    // FLOPs do not depend on the split: compare with one GPU doing the same work.
    Strategy single;
    single.global_batch = s.global_batch;
    single.micro_batch = s.micro_batch;
    single.recompute = s.recompute;
    single.flash_attention = s.flash_attention;
    const CompiledJob one = compile(m, single);
    EXPECT_TRUE(near_rel(job.info.model_flops, one.job.info.model_flops, 1e-9))
        << job.info.model_flops << " vs " << one.job.info.model_flops;
    EXPECT_TRUE(near_rel(job.info.hardware_flops, one.job.info.hardware_flops, 1e-9))
        << job.info.hardware_flops << " vs " << one.job.info.hardware_flops;
  }
  EXPECT_GE(own_embedding_tp, 15);
}

TEST(Property, ProgramsAreSharedPerStage) {
  ModelSpec m = gpt(8, 256, 8, 64, 1024);
  Strategy s;
  s.tp = 4;
  s.pp = 4;
  s.dp = 4;
  s.global_batch = 16;
  const CompiledJob c = compile(m, s);
  std::map<const Program*, int> users;
  for (const Rank& r : c.job.ranks) ++users[r.program.get()];
  EXPECT_EQ(users.size(), 4u);
  for (const auto& [program, n] : users) EXPECT_EQ(n, 16);
}

TEST(Property, MegatronRankOrder) {
  // tp-cp-ep-dp-pp: TP neighbours are consecutive ranks, pipeline stages tp*cp*dp apart.
  ModelSpec m = gpt(8, 256, 8, 64, 1024);
  Strategy s;
  s.tp = 2;
  s.cp = 2;
  s.dp = 2;
  s.pp = 2;
  const CompiledJob c = compile(m, s);
  const Job& job = c.job;
  const Rank& r5 = job.ranks[5];  // tp 1, cp 0, dp 1, pp 0
  EXPECT_EQ(job.communicators[r5.communicators[c.slots.tp]].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(job.communicators[r5.communicators[c.slots.cp]].ranks, (std::vector<int>{5, 7}));
  EXPECT_EQ(job.communicators[r5.communicators[c.slots.dp]].ranks, (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(r5.peers[kNextStagePeer], 13);
  EXPECT_EQ(c.stage_of_rank[13], 1);
}

}  // namespace
