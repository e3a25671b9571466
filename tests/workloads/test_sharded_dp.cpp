// Fully sharded data parallelism (--zero 3) as each framework profile runs it: what is gathered
// per call, when a gather may start, gathers again for the recompute, the copies of PyTorch's
// tensor-list collectives, and how gradients are reduced (docs/workloads.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_helpers.h"
#include "workloads/framework.h"

namespace tessera::workloads {
namespace {

using testing::error_of;
using testing::gpt;

struct Counts {
  int gathers = 0, reduce_scatters = 0, all_reduces = 0, copies = 0;
  int copy_kernels = 0;
};

Counts count(const CompiledJob& c) {
  Counts n;
  const Program& p = *c.job.ranks[0].program;
  for (const Op& op : p.ops) {
    const std::string name = c.job.op_name(op);
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::AllGather &&
        name.find("param_allgather") != std::string::npos)
      ++n.gathers;
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::ReduceScatter) ++n.reduce_scatters;
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::AllReduce) ++n.all_reduces;
    if (name.find("_copies") != std::string::npos) ++n.copies, n.copy_kernels = op.kernels;
  }
  return n;
}

// Two layers of h = 1024: four weight tensors of at least 1e6 elements each, biases and norms
// below DeepSpeed's 1e5 persistence threshold.
CompiledJob sharded(const Framework& f, Recompute recompute = Recompute::Full) {
  Strategy s;
  s.dp = 4;
  s.zero = 3;
  s.micro_batch = 1;
  s.global_batch = 4;
  s.recompute = recompute;
  s.dtype = DType::FP16;
  apply_framework_defaults(s, f);
  return compile(gpt(2, 1024, 16, 512, 1024), s, 0, f);
}

std::string write_framework(const std::string& text) { return testing::write_temp_file("tessera_sharded_fw.yaml", text); }

TEST(ShardedDp, DeepSpeed2021GathersEachLargeTensorThreeTimesWithListCopies) {
  const Counts n = count(sharded(load_framework("deepspeed-2021")));
  // Layers: 4 weights x (forward, recompute, backward) x 2 layers; the embedding (the word and
  // the learned position tables, forward and backward) and the output layer (tied: its norm
  // only, below the threshold).
  EXPECT_EQ(n.gathers, 4 * 3 * 2 + 2 * 2);
  // Gradients all-reduced in buckets: no reduce-scatter at all.
  EXPECT_EQ(n.reduce_scatters, 0);
  EXPECT_GT(n.all_reduces, 0);
  // One copy kernel per member for every gather.
  EXPECT_EQ(n.copies, n.gathers);
  EXPECT_EQ(n.copy_kernels, 4);
}

TEST(ShardedDp, FsdpGathersEachBlockOnceForwardAndOnceBackward) {
  const Counts n = count(sharded(load_framework("pytorch-fsdp")));
  EXPECT_EQ(n.gathers, 2 * (2 + 2));  // 2 layers, the embedding and the output's norm
  EXPECT_EQ(n.reduce_scatters, 4);    // one per unit, after its backward
  EXPECT_EQ(n.copies, 0);
}

TEST(ShardedDp, ModernDeepSpeedReduceScattersBuckets) {
  const Framework f = load_framework("deepspeed");
  const Counts n = count(sharded(f));
  EXPECT_EQ(n.gathers, 4 * 3 * 2 + 2 * 2);
  EXPECT_EQ(n.copies, 0);
  // 953.7 MiB buckets hold the whole model: one reduce-scatter.
  EXPECT_EQ(n.reduce_scatters, 1);
}

// The op a gather waits for: with no prefetch, the last compute op before it; with one unit of
// prefetch, the compute op that ends before the previous unit (earlier, for some); with no
// limit, nothing.
TEST(ShardedDp, PrefetchLimitsGateTheGathers) {
  Framework sync = load_framework("pytorch-fsdp");
  sync.zero3_prefetch_units = 0;
  Framework ahead = sync;
  ahead.zero3_prefetch_units = 1;
  Framework unlimited = sync;
  unlimited.zero3_prefetch_units = -1;
  struct Gate {
    int op = -1, dep = -1;
  };
  auto gates = [](const CompiledJob& c, std::vector<OpKind>& kinds) {
    std::vector<Gate> out;
    const Program& p = *c.job.ranks[0].program;
    kinds.clear();
    for (const Op& op : p.ops) kinds.push_back(op.kind);
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (op.kind != OpKind::Collective || op.collective != CollectiveKind::AllGather) continue;
      out.push_back({int(i), op.deps.empty() ? -1 : int(*(op.deps.end() - 1))});
    }
    return out;
  };
  std::vector<OpKind> kinds;
  const auto u = gates(sharded(unlimited, Recompute::None), kinds);
  const auto a = gates(sharded(ahead, Recompute::None), kinds);
  const auto s = gates(sharded(sync, Recompute::None), kinds);
  ASSERT_EQ(s.size(), a.size());
  ASSERT_GT(s.size(), 3u);
  int earlier = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    ASSERT_GE(s[i].dep, 0) << "gather " << i;
    EXPECT_EQ(kinds[size_t(s[i].dep)], OpKind::Compute);
    for (int k = s[i].dep + 1; k < s[i].op; ++k)
      EXPECT_NE(kinds[size_t(k)], OpKind::Compute) << "gather " << i << " waits for the last compute op";
    EXPECT_LE(a[i].dep, s[i].dep);
    earlier += a[i].dep < s[i].dep;
    EXPECT_EQ(u[i].dep, -1) << "no limit: nothing to wait for";
  }
  EXPECT_GT(earlier, 0) << "one unit ahead lets some gathers start earlier";
}

TEST(ShardedDp, BadShardingKeysNameTheKey) {
  EXPECT_NE(error_of([] { load_framework(write_framework("zero3_fetch: layers\n")); })
                .find(":1: key 'zero3_fetch'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_framework(write_framework("zero3_grad_reduction: ring\n")); })
                .find("must be fetch, buckets or allreduce_buckets"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_framework(write_framework("zero3_prefetch_elements: -2\n")); })
                .find(":1: key 'zero3_prefetch_elements'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_framework(write_framework("grad_bucket_mb: -1\n")); }).find("grad_bucket_mb"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::workloads
