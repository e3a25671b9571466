// Analytic fidelity against flow fidelity: the same runs through the executable, iteration
// times within 5% (each flow run takes well under a second).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "run_tessera.h"

namespace {

struct Case {
  const char* name;
  const char* args;
};

double iteration_time(const std::string& fidelity, const std::string& args, const std::string& name) {
  const std::string report = cli_testing::temp_dir() + "/" + name + "_" + fidelity + ".json";
  const cli_testing::Result r =
      cli_testing::tessera("run -q --fidelity " + fidelity + " --report " + report + " " + args);
  EXPECT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(cli_testing::read_file(report));
  EXPECT_EQ(j["simulation"]["fidelity"], fidelity);
  return j["iteration_time_s"].get<double>();
}

class AnalyticAgainstFlow : public ::testing::TestWithParam<Case> {};

TEST_P(AnalyticAgainstFlow, WithinFivePercent) {
  const Case& c = GetParam();
  const double analytic = iteration_time("analytic", c.args, c.name);
  const double flow = iteration_time("flow", c.args, c.name);
  EXPECT_NEAR(analytic / flow, 1.0, 0.05) << "analytic " << analytic * 1e3 << " ms, flow " << flow * 1e3 << " ms";
}

// Four layers of GPT-3 1.3B on DGX A100 nodes (no in-switch reduction, which flow fidelity
// cannot model), one parallelism at a time and some together.
const Case kCases[] = {
    {"dp", "--platform dgx-a100 --layers 4 --dp 8"},
    {"tp_sp", "--platform dgx-a100 --layers 4 --tp 4 --dp 2 --sequence-parallel --global-batch 4"},
    {"pp_gpipe", "--platform dgx-a100 --layers 4 --tp 2 --pp 4 --dp 1 --global-batch 8 --schedule gpipe"},
    {"pp_1f1b", "--platform dgx-a100 --layers 4 --tp 2 --pp 4 --dp 1 --global-batch 8 --schedule 1f1b"},
    {"pp_interleaved", "--platform dgx-a100 --layers 4 --tp 2 --pp 2 --dp 2 --global-batch 8 --schedule interleaved --vpp 2"},
    {"cp", "--platform dgx-a100 --layers 4 --cp 2 --dp 4 --global-batch 4"},
    {"ep", "--platform dgx-a100 --model mixtral-8x7b --layers 2 --ep 4 --dp 8 --global-batch 8 --allow-oom"},
    {"zero1", "--platform dgx-a100 --layers 4 --dp 8 --zero 1"},
    {"zero2", "--platform dgx-a100 --layers 4 --dp 8 --zero 2"},
    {"zero3", "--platform dgx-a100 --layers 4 --dp 8 --zero 3"},
    {"recompute", "--platform dgx-a100 --layers 4 --tp 2 --pp 2 --dp 2 --global-batch 8 --recompute full"},
    {"multi_node_dp", "--platform dgx-a100 --layers 4 --nodes 2 --dp 16 --global-batch 32"},
    {"multi_node_tp_pp", "--platform dgx-a100 --layers 4 --nodes 2 --tp 8 --pp 2 --global-batch 8"},
};

INSTANTIATE_TEST_SUITE_P(Configurations, AnalyticAgainstFlow, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(AnalyticRun, ReportsFidelityAndRanksCosted) {
  const std::string report = cli_testing::temp_dir() + "/classes.json";
  const cli_testing::Result r = cli_testing::tessera(
      "run --fidelity analytic --platform dgx-a100 --layers 4 --tp 2 --pp 4 --global-batch 8 --report " + report);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(", analytic fidelity"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(cli_testing::read_file(report));
  // One class per pipeline stage: TP ranks of a stage are alike.
  EXPECT_EQ(j["simulation"]["ranks_costed"], 4);
  EXPECT_EQ(j["ranks"].size(), 8u);
}

TEST(AnalyticRun, RejectsIterations) {
  const cli_testing::Result r = cli_testing::tessera("run --fidelity analytic --iterations 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--iterations 3"), std::string::npos) << r.err;
}

}  // namespace
