// Pipeline schedules on the timeline executor: with uniform stage times and free communication
// the iteration takes (m + p - 1)(t_f + t_b) for GPipe and 1F1B, and interleaving v chunks cuts
// the bubble to (p - 1) / (v m).
#include <gtest/gtest.h>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

namespace {

// Time = matmul FLOPs (one FLOP per time unit); communication and element-wise work are free.
double flops_time(const Job&, const Rank&, const Op& op) {
  return op.kind == OpKind::Compute && op.matmul ? op.flops : 0.0;
}

double iteration(Schedule schedule, int pp, int vpp, int64_t m, int dp = 1) {
  Strategy s;
  s.pp = pp;
  s.vpp = vpp;
  s.dp = dp;
  s.schedule = schedule;
  s.global_batch = m * dp;
  const CompiledJob c = compile(uniform_layers(24, 1.0), s);
  const TimelineResult r = run_timeline(c.job, flops_time);
  EXPECT_TRUE(r.completed) << r.deadlock;
  return r.makespan;
}

TEST(PipelineTime, GPipe) {
  for (int p : {1, 2, 4, 8})
    for (int64_t m : {1, 3, 8, 16}) {
      const double tf = 24.0 / p, tb = 2 * tf;
      EXPECT_DOUBLE_EQ(iteration(Schedule::GPipe, p, 1, m), (m + p - 1) * (tf + tb))
          << "p " << p << " m " << m;
    }
}

TEST(PipelineTime, OneFOneB) {
  for (int p : {1, 2, 4, 8})
    for (int64_t m : {1, 3, 8, 16}) {
      const double tf = 24.0 / p, tb = 2 * tf;
      EXPECT_DOUBLE_EQ(iteration(Schedule::OneFOneB, p, 1, m, 2), (m + p - 1) * (tf + tb))
          << "p " << p << " m " << m;
    }
}

TEST(PipelineTime, InterleavedBubble) {
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int64_t m : {int64_t(p), 2 * int64_t(p), 4 * int64_t(p)}) {
        const double tf = 24.0 / p, tb = 2 * tf;
        const double ideal = m * (tf + tb);
        const double time = iteration(Schedule::Interleaved, p, v, m);
        EXPECT_DOUBLE_EQ((time - ideal) / ideal, double(p - 1) / (v * m))
            << "p " << p << " v " << v << " m " << m;
      }
}

TEST(PipelineTime, GptLayersOnly) {
  // A GPT with time only in its transformer layers' GEMMs and attention: the same closed form.
  ModelSpec m = gpt(8, 256, 8, 128, 1024);
  Strategy s;
  s.pp = 4;
  s.tp = 2;
  s.sequence_parallel = true;
  s.global_batch = 6;
  const CompiledJob c = compile(m, s);
  auto layer_time = [](const Job& job, const Rank&, const Op& op) {
    const bool in_layer = job.op_name(op).rfind("layer", 0) == 0;
    return op.kind == OpKind::Compute && op.matmul && in_layer ? op.flops : 0.0;
  };
  const TimelineResult r = run_timeline(c.job, layer_time);
  ASSERT_TRUE(r.completed) << r.deadlock;
  // Forward matmul FLOPs of two layers on one TP rank: (24 T h^2 + 4 b s^2 h) / t per layer.
  const double T = 128, h = 256;
  const double tf = 2 * (24 * T * h * h + 4 * 128.0 * 128.0 * h) / 2;
  EXPECT_DOUBLE_EQ(r.makespan, (6 + 4 - 1) * 3 * tf);
}

TEST(Schedule, PipelineSendsRunOnThePipelineGroup) {
  // Megatron-LM batches each step's sends and receives on the pipeline group, so NCCL picks
  // their channels per peer for pp ranks; a job without a pipeline keeps PyTorch's 2.
  Strategy s;
  s.pp = 4;
  s.global_batch = 8;
  EXPECT_EQ(compile(uniform_layers(24, 1.0), s).job.p2p_ranks, 4);
  s.pp = 1;
  EXPECT_EQ(compile(uniform_layers(24, 1.0), s).job.p2p_ranks, 2);
}

TEST(Schedule, OneFOneBOrder) {
  // Stage 1 of 4 with 5 micro-batches: 2 warm-up forwards, then alternate, then cool down.
  const auto steps = pipeline_schedule(Schedule::OneFOneB, 4, 1, 5, 1);
  std::string order;
  for (const PipelineStep& s : steps) order += (s.forward ? "F" : "B") + std::to_string(s.micro_batch) + " ";
  EXPECT_EQ(order, "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4 ");
}

TEST(Timeline, ReportsDeadlock) {
  // Rank 0 receives from rank 1, which never sends.
  Job job;
  job.stream_names = {"compute", "pp_recv"};
  auto p0 = std::make_shared<Program>();
  Op recv;
  recv.kind = OpKind::Recv;
  recv.stream = 1;
  recv.slot = 0;
  recv.tag = 7;
  recv.message_bytes = 16;
  recv.name = job.intern("pp.recv_activation");
  p0->ops.push_back(recv);
  auto p1 = std::make_shared<Program>();
  Op work;
  work.name = job.intern("work");
  p1->ops.push_back(work);
  job.ranks = {Rank{0, p0, {}, {1}}, Rank{1, p1, {}, {0}}};
  const TimelineResult r = run_timeline(job, flops_time);
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(r.deadlock, "1 rank(s) cannot finish: rank 0: [pp_recv] op 0 recv pp.recv_activation");
}

}  // namespace
