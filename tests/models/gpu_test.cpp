// The GPU: roofline kernel times, CUDA-stream order, cross-stream dependencies, and a
// collective that one rank never joins.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/gpu/program_graph.h"
#include "tests/support/child_process.h"
#include "tests/support/jobs.h"

namespace tessera {
namespace {

using testing::ProgramBuilder;
using testing::run_in_child;

nlohmann::json run_traced(const platforms::PlatformConfig& p, const workloads::Job& job) {
  return run_in_child([&] {
    app::SimulationOptions o;
    o.trace = true;
    return testing::summarize(app::simulate(p, job, o));
  });
}

double span_start(const nlohmann::json& spans, uint32_t op) {
  for (const auto& s : spans)
    if (s["op"] == op) return s["start"];
  ADD_FAILURE() << "no span for op " << op;
  return -1;
}
double span_end(const nlohmann::json& spans, uint32_t op) {
  for (const auto& s : spans)
    if (s["op"] == op) return s["end"];
  ADD_FAILURE() << "no span for op " << op;
  return -1;
}

TEST(ComputeEngine, KernelTakesTheRooflineTime) {
  auto p = testing::ideal_node(2);
  const models::GpuSpec& g = p.gpu;
  const double peak = g.peak_tflops[static_cast<size_t>(workloads::DType::BF16)] * 1e12 * g.compute_efficiency;
  const double hbm = g.hbm_bandwidth_gbps * 1e9 * g.hbm_efficiency;
  const double overhead = g.kernel_overhead_us * 1e-6;
  workloads::Job job;
  ProgramBuilder b(job, 0);
  const auto gemm = b.compute("compute_bound", "compute", 4e12, 1e8);   // flops dominate
  const auto copy = b.compute("memory_bound", "compute", 1e9, 30e9);    // bytes dominate
  b.finish();
  ProgramBuilder idle(job, 1);
  idle.compute("idle", "compute", 0, 1);
  idle.finish();
  const nlohmann::json r = run_traced(p, job);
  const auto& spans = r["spans"][0];
  const double t_gemm = std::max(4e12 / peak, 1e8 / hbm) + overhead;
  const double t_copy = std::max(1e9 / peak, 30e9 / hbm) + overhead;
  EXPECT_NEAR(span_end(spans, gemm) - span_start(spans, gemm), t_gemm, 1e-11);
  EXPECT_NEAR(span_end(spans, copy) - span_start(spans, copy), t_copy, 1e-11);
  EXPECT_NEAR(r["iteration_time_s"].get<double>(), t_gemm + t_copy, 1e-11);
  EXPECT_NEAR(r["compute_s"][0].get<double>(), t_gemm + t_copy, 1e-11);
}

// Every member numbers its calls on a communicator in program order: the program's numbering by
// slot serves every rank whose slots name distinct communicators; a rank whose two slots name one
// communicator counts their calls together.
TEST(CallNumbers, EachCommunicatorsCallsInProgramOrder) {
  workloads::Job job;
  ProgramBuilder b(job, 0);
  const auto c0 = b.collective("x", "comm", workloads::CollectiveKind::AllReduce, 3, 1 << 20);
  b.compute("k", "compute", 1e9, 0);
  b.collective("y", "comm", workloads::CollectiveKind::AllGather, 4, 1 << 20, {c0});
  b.p2p(true, "s", "p2p", 1, 1 << 20, 7);
  b.collective("x", "comm", workloads::CollectiveKind::AllReduce, 3, 1 << 20);
  b.collective("y", "comm", workloads::CollectiveKind::AllGather, 4, 1 << 20);
  b.finish();
  const workloads::Rank& rank = job.ranks[0];
  const models::ProgramGraph graph(*rank.program);
  const uint32_t none = models::kNoCall;
  EXPECT_EQ(graph.calls, (std::vector<uint32_t>{0, none, 0, none, 1, 1}));
  std::vector<uint32_t> own;
  EXPECT_EQ(&models::rank_calls(rank, graph, own), &graph.calls);  // slots 0 and 1: communicators 3 and 4
  workloads::Rank shared = rank;
  shared.communicators = {3, 3};
  EXPECT_EQ(models::rank_calls(shared, graph, own), (std::vector<uint32_t>{0, none, 1, none, 2, 3}));
}

TEST(CommandProcessor, StreamsRunInOrderAndWaitForCrossStreamDependencies) {
  // compute: A, B, C in order; comm: an all-reduce that waits for A; C waits for the
  // all-reduce. Expected order: A, then (B | all-reduce overlapping), then C after both.
  auto p = testing::ideal_node(2);
  workloads::Job job;
  job.communicators.push_back({"pair", {0, 1}});
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(job, r);
    const auto a = b.compute("A", "compute", 1e12, 0);
    const auto bb = b.compute("B", "compute", 1e12, 0);
    const auto ar = b.collective("allreduce", "comm", workloads::CollectiveKind::AllReduce, 0,
                                 256ull << 20, {a});
    const auto c = b.compute("C", "compute", 1e12, 0, {ar});
    (void)bb;
    (void)c;
    b.finish();
  }
  const nlohmann::json r = run_traced(p, job);
  const auto& spans = r["spans"][0];
  const double a_end = span_end(spans, 0), b_start = span_start(spans, 1), b_end = span_end(spans, 1);
  const double ar_start = span_start(spans, 2), ar_end = span_end(spans, 2);
  const double c_start = span_start(spans, 3);
  EXPECT_LE(a_end, b_start);              // in order on the compute stream
  EXPECT_DOUBLE_EQ(ar_start, a_end);      // the all-reduce starts when A is done
  EXPECT_LT(ar_start, b_end);             // and overlaps B
  EXPECT_GE(c_start, b_end);              // C waits for its stream predecessor
  EXPECT_GE(c_start, ar_end);             // and for the all-reduce on the other stream
  // The all-reduce (~1.0 ms at 450 GB/s) outlasts B (~1.3 ms? no: 1e12/791e12 = 1.26 ms):
  // C starts at the later of the two.
  EXPECT_DOUBLE_EQ(c_start, std::max(b_end, ar_end));
}

// n ranks on an ideal node whose last rank never joins the all-reduce the others call: the
// summary of the run.
nlohmann::json last_rank_never_joins(int n) {
  auto p = testing::ideal_node(n);
  workloads::Job job;
  std::vector<int> world(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) world[size_t(r)] = r;
  job.communicators.push_back({"world", world});
  for (int r = 0; r < n; ++r) {
    ProgramBuilder b(job, r);
    b.compute("warmup", "compute", 1e9, 0);
    if (r != n - 1) b.collective("grad_allreduce", "comm", workloads::CollectiveKind::AllReduce, 0, 1 << 20);
    b.finish();
  }
  return run_in_child([&] { return testing::summarize(app::simulate(p, job, app::SimulationOptions{})); });
}

TEST(Deadlock, ACollectiveOneRankNeverJoinsNamesTheStuckRanks) {
  const nlohmann::json r = last_rank_never_joins(4);
  ASSERT_TRUE(r["deadlocked"].get<bool>());
  const std::string text = r["deadlock"];
  for (int rank : {0, 1, 2})
    EXPECT_NE(text.find("rank " + std::to_string(rank) + " is stuck at op 1 'grad_allreduce'"),
              std::string::npos) << text;
  EXPECT_NE(text.find("waiting for rank 3 that never joined"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 3 is stuck"), std::string::npos) << text;  // rank 3 finished
}

// Many stuck ranks: the first eight stuck ops by name, the rest counted (one line a person reads).
TEST(Deadlock, ManyStuckRanksAreCountedAfterTheFirstFew) {
  const nlohmann::json r = last_rank_never_joins(12);
  ASSERT_TRUE(r["deadlocked"].get<bool>());
  const std::string text = r["deadlock"];
  EXPECT_NE(text.find("rank 7 is stuck at op 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 8 is stuck"), std::string::npos) << text;
  EXPECT_NE(text.find("and 3 more stuck ops (11 ranks stuck in all)."), std::string::npos) << text;
}

TEST(Deadlock, AReceiveWithoutItsSendIsReported) {
  auto p = testing::ideal_node(2);
  workloads::Job job;
  ProgramBuilder a(job, 0);
  a.p2p(false, "recv_activations", "pp", 1, 4096, 7);
  a.finish();
  ProgramBuilder b(job, 1);
  b.compute("forward", "compute", 1e9, 0);
  b.finish();
  const nlohmann::json r = run_in_child([&] {
    return testing::summarize(app::simulate(p, job, app::SimulationOptions{}));
  });
  ASSERT_TRUE(r["deadlocked"].get<bool>());
  EXPECT_NE(r["deadlock"].get<std::string>().find("rank 0 is stuck at op 0 'recv_activations' (recv from rank 1"),
            std::string::npos) << r["deadlock"];
}

}  // namespace
}  // namespace tessera
