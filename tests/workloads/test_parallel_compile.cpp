// The pipeline stages' programs are built side by side (workloads/parallel_for.h): the job is
// the same, name for name and op for op, whatever the number of threads.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/workloads/test_helpers.h"
#include "workloads/parallel_for.h"

namespace tessera::workloads {
namespace {

// Everything an op holds, names and streams as text (so the comparison does not depend on how
// the tables are numbered, and then the numbers themselves are compared too).
std::string describe(const Job& job, const Op& op) {
  std::string d = job.names[op.name] + "|" + job.stream_names[op.stream] + "|" + std::to_string(op.name) + "|" +
                  std::to_string(op.stream) + "|" + to_string(op.kind) + "|" + to_string(op.phase) + "|" +
                  to_string(op.kernel) + "|" + std::to_string(op.kernels) + "|" + std::to_string(op.flops) + "|" +
                  std::to_string(op.bytes) + "|" + std::to_string(op.gemm.m) + "x" + std::to_string(op.gemm.n) + "x" +
                  std::to_string(op.gemm.k) + "x" + std::to_string(op.gemm.batch) + "|" +
                  std::to_string(op.elements) + "|" + to_string(op.collective) + "|" +
                  std::to_string(op.message_bytes) + "|" + std::to_string(op.slot) + "|" + std::to_string(op.tag) +
                  "|" + std::to_string(op.micro_batch) + "|deps";
  for (OpId dep : op.deps) d += " " + std::to_string(dep);
  return d;
}

TEST(ParallelCompile, TheJobIsTheSameOnAnyNumberOfThreads) {
  const ModelSpec model = testing::gpt(16, 1024, 16, 512, 32000);
  Strategy s;
  s.tp = 2;
  s.pp = 8;
  s.dp = 2;
  s.micro_batch = 1;
  s.global_batch = 32;
  s.schedule = Schedule::Interleaved;
  s.vpp = 2;
  s.zero = 1;
  s.recompute = Recompute::Full;
  const CompiledJob one = compile(model, s, 0, Framework{}, 1);
  ASSERT_EQ(one.job.ranks.size(), 32u);
  for (int threads : {2, 3, 8}) {
    const CompiledJob many = compile(model, s, 0, Framework{}, threads);
    EXPECT_EQ(many.job.names, one.job.names) << threads << " threads";
    EXPECT_EQ(many.job.stream_names, one.job.stream_names) << threads << " threads";
    ASSERT_EQ(many.job.ranks.size(), one.job.ranks.size());
    for (size_t r = 0; r < one.job.ranks.size(); ++r) {
      const auto& a = one.job.ranks[r].program->ops;
      const auto& b = many.job.ranks[r].program->ops;
      ASSERT_EQ(a.size(), b.size()) << "rank " << r;
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(describe(many.job, b[i]), describe(one.job, a[i])) << "rank " << r << " op " << i;
    }
  }
}

TEST(ParallelFor, RunsEveryPieceOnceAndRethrowsTheLowestFailure) {
  for (int threads : {1, 2, 4}) {
    std::vector<int> runs(50, 0);
    parallel_for(50, [&](int i) { ++runs[size_t(i)]; }, threads);
    EXPECT_EQ(runs, std::vector<int>(50, 1)) << threads << " threads";
    try {
      parallel_for(
          50,
          [](int i) {
            if (i % 7 == 3) throw std::runtime_error("piece " + std::to_string(i));
          },
          threads);
      ADD_FAILURE() << "nothing thrown";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "piece 3") << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace tessera::workloads
