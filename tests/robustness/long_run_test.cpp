// Long-run stability: ten thousand iterations of a small job run in bounded time at the memory
// of a hundred, and give the same time per iteration.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "tests/support/temp_folder.h"

namespace robustness {
namespace {

// Eight ranks, each two GEMMs and an all-reduce of 1 MiB.
std::string small_job() {
  std::string text = "communicators: {world: [0, 1, 2, 3, 4, 5, 6, 7]}\nranks:\n";
  for (int r = 0; r < 8; ++r)
    text += "  - ops: [{name: f, kind: compute, gemm: [1024, 1024, 1024]},"
            " {name: g, kind: compute, gemm: [1024, 1024, 1024], deps: [f]},"
            " {name: a, kind: allreduce, communicator: world, bytes: 1048576, deps: [g]}]\n";
  return text;
}

struct LongRunResult {
  long max_rss_kib;
  double iteration_time_s;
};

LongRunResult run_iterations(const std::string& folder, int iterations) {
  const std::string report = "report" + std::to_string(iterations) + ".json";
  const Outcome r = run_child(TESSERA_BIN, {"run", "--job", "job.yaml", "-q", "--iterations", std::to_string(iterations),
                                            "--report", report},
                              folder, Limits{120, 4ULL << 30});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.err;
  const auto json = nlohmann::json::parse(std::ifstream(folder + "/" + report));
  EXPECT_EQ(json["simulation"]["iterations"].get<int>(), iterations);
  return {r.max_rss_kib, json["iteration_time_s"].get<double>()};
}

TEST(LongRun, TenThousandIterationsAtFlatMemory) {
  const test_support::TempFolder scratch("/tmp/tessera-long-run-");
  const std::string& folder = scratch.path();
  std::ofstream(folder + "/job.yaml") << small_job();
  const LongRunResult few = run_iterations(folder, 100);
  const LongRunResult many = run_iterations(folder, 10000);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's quarantine holds freed memory back
  EXPECT_LT(many.max_rss_kib, few.max_rss_kib + 4096) << "memory grows with iterations";
#endif
  EXPECT_NEAR(many.iteration_time_s, few.iteration_time_s, 0.01 * few.iteration_time_s);
}

}  // namespace
}  // namespace robustness
