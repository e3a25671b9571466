// Pipeline schedules executed by the SystemC GPUs: with uniform stage times and (nearly) free
// communication the iteration takes (m + p - 1)(t_f + t_b) for GPipe and 1F1B, and the
// interleaved schedule cuts the bubble to (p - 1) / (v m) of the ideal time.
#include <gtest/gtest.h>

#include "tests/support/child_process.h"
#include "tests/support/jobs.h"
#include "tests/workloads/test_helpers.h"
#include "workloads/workload.h"

namespace tessera {
namespace {

using workloads::Schedule;

constexpr int64_t kLayers = 24;
constexpr double kLayerSeconds = 1e-6;  // forward time of one layer for one sample

// Identical weightless layers of 1 GFLOP forward per sample (tests/workloads/test_helpers.h) on
// a GPU of exactly 1000 TFLOP/s with no kernel overhead, on a fabric so fast that activations
// move in about a picosecond.
platforms::PlatformConfig instant_fabric(int gpus) {
  platforms::PlatformConfig p = testing::ideal_node(gpus, 1e6);
  p.node.nvlink.link.latency_ns = 0;
  p.node.nvlink.switch_latency_ns = 0;
  p.gpu.kernel_overhead_us = 0;
  p.gpu.compute_efficiency = 1.0;
  p.gpu.peak_tflops = {1000, 1000, 1000, 1000, 1000};
  return p;
}

double simulated_iteration(Schedule schedule, int p, int v, int64_t m) {
  workloads::Strategy s;
  s.pp = p;
  s.vpp = v;
  s.dp = 1;
  s.schedule = schedule;
  s.global_batch = m;
  const workloads::CompiledJob compiled = workloads::compile(workloads::testing::uniform_layers(kLayers, 1e9), s);
  const nlohmann::json r = testing::run_in_child([&] {
    return testing::summarize(app::simulate(instant_fabric(p), compiled.job, app::SimulationOptions{}));
  });
  EXPECT_FALSE(r.contains("error")) << r.dump();
  EXPECT_FALSE(r["deadlocked"].get<bool>()) << r["deadlock"];
  return r["iteration_time_s"];
}

TEST(PipelineOnGpus, GPipeAndOneFOneBTakeMPlusPMinusOneStageTimes) {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB})
    for (int p : {2, 4})
      for (int64_t m : {1, 4, 8}) {
        const double tf = kLayers / p * kLayerSeconds, tb = 2 * tf;
        const double expected = (m + p - 1) * (tf + tb);
        EXPECT_NEAR(simulated_iteration(schedule, p, 1, m), expected, 1e-3 * expected)
            << "p " << p << " m " << m;
      }
}

TEST(PipelineOnGpus, InterleavingCutsTheBubbleToPMinusOneOverVM) {
  const int p = 4;
  const int64_t m = 8;
  const double ideal = m * 3.0 * kLayers / p * kLayerSeconds;  // m (t_f + t_b), no bubble
  for (int v : {1, 2, 3}) {
    const double t = simulated_iteration(v == 1 ? Schedule::OneFOneB : Schedule::Interleaved, p, v, m);
    const double bubble = (t - ideal) / ideal;
    EXPECT_NEAR(bubble, double(p - 1) / (v * m), 1e-3) << "v " << v;
  }
}

}  // namespace
}  // namespace tessera
