// Analytic fidelity against flow fidelity: the same runs through the executable, iteration
// times within 5% (each flow run takes well under a second).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "run_tessera.h"

namespace {

struct Case {
  const char* name;
  const char* args;
};

nlohmann::json report(const std::string& fidelity, const std::string& args, const std::string& name) {
  const std::string path = cli_testing::temp_dir() + "/" + name + "_" + fidelity + ".json";
  const cli_testing::Result r =
      cli_testing::tessera("run -q --fidelity " + fidelity + " --report " + path + " " + args);
  EXPECT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(cli_testing::read_file(path));
  EXPECT_EQ(j["simulation"]["fidelity"], fidelity);
  return j;
}

class AnalyticAgainstFlow : public ::testing::TestWithParam<Case> {};

// The iteration time within 5%, and each cause's share (time_by_cause_s, the mean over ranks)
// within 5% of the iteration time of what flow fidelity charges to it; each fidelity's causes
// add up to its iteration time.
TEST_P(AnalyticAgainstFlow, WithinFivePercent) {
  const Case& c = GetParam();
  const nlohmann::json a = report("analytic", c.args, c.name), f = report("flow", c.args, c.name);
  const double analytic = a["iteration_time_s"], flow = f["iteration_time_s"];
  EXPECT_NEAR(analytic / flow, 1.0, 0.05) << "analytic " << analytic * 1e3 << " ms, flow " << flow * 1e3 << " ms";
  double sum_a = 0, sum_f = 0;
  for (const auto& [cause, seconds] : f["time_by_cause_s"].items()) {
    const double fa = a["time_by_cause_s"][cause], ff = seconds;
    EXPECT_NEAR(fa, ff, 0.05 * flow) << cause << ": analytic " << fa * 1e3 << " ms, flow " << ff * 1e3 << " ms";
    sum_a += fa;
    sum_f += ff;
  }
  EXPECT_NEAR(sum_a, analytic, 1e-9 * analytic);
  EXPECT_NEAR(sum_f, flow, 1e-9 * flow);
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
    // Data-parallel rings with two or four members per node, on GPUs of different PCIe
    // switches: a ring's step between nodes arrives on a NIC near its receiver (across the
    // rails), never through the CPU (Routing::entry_gateway), as the tuner's cost assumes.
    {"multi_node_zero2_tp4", "--platform dgx-a100 --layers 4 --nodes 2 --tp 4 --dp 4 --global-batch 8 --zero 2 --overlap-grad-reduce off"},
    {"multi_node_dp_tp2", "--platform dgx-a100 --layers 4 --nodes 2 --tp 2 --dp 8 --global-batch 8 --overlap-grad-reduce off"},
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

TEST(Analyze, SensitivityConfirmedInFlowFidelity) {
  const cli_testing::Result r = cli_testing::tessera(
      "analyze --sensitivity --confirm --platform dgx-a100 --layers 4 --tp 2 --pp 2 --dp 2 --global-batch 8");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tessera analyze: gpt3-1.3b on dgx-a100 (8 x A100-SXM4-80GB), analytic iteration time"),
            std::string::npos) << r.out;
  EXPECT_EQ(cli_testing::lines(r.out), 1 + 2 + 11 + 2 + 3) << r.out;  // title, table of 11, confirmation of 3
  // The most sensitive parameter is the dtype's peak, in both fidelities (within 0.05).
  const auto at = r.out.find("confirmed in flow fidelity");
  ASSERT_NE(at, std::string::npos) << r.out;
  double analytic = 0, flow = 0;
  const auto line = r.out.find("peak FLOP/s bf16", at);
  ASSERT_NE(line, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + line, "peak FLOP/s bf16 %lf %lf", &analytic, &flow), 2) << r.out;
  EXPECT_LT(analytic, -0.3);
  EXPECT_NEAR(analytic, flow, 0.05);
}

TEST(Analyze, SymbolicFormEqualsTheAnalyticTime) {
  const cli_testing::Result r =
      cli_testing::tessera("analyze --symbolic --platform dgx-a100 --layers 4 --tp 2 --pp 4 --global-batch 8");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("with b = 1, s = 2048, h = 2048, layers = 4, t = 2, p = 4, d = 1, v = 1, m = 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" / (0."), std::string::npos) << r.out;
  const auto at = r.out.find("  T = ");
  ASSERT_NE(at, std::string::npos) << r.out;
  double terms = 0, model = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "  T = %lf ms (the terms evaluated; the analytic model: %lf ms)", &terms, &model), 2);
  EXPECT_EQ(terms, model);  // equal to the printed microsecond fraction
  // W written in the parameters, evaluated to the same time.
  EXPECT_NE(r.out.find("L = (m v + p - 1) (layers / (p v)) = 11 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F_f = 24 b s h^2 / t + 4 b s^2 h / t = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("W = L (F_f + 2 F_f) + "), std::string::npos) << r.out;
  const auto formulas = r.out.find("  T = ", at + 1);
  ASSERT_NE(formulas, std::string::npos) << r.out;
  double evaluated = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + formulas, "  T = %lf ms (the formulas of W evaluated", &evaluated), 1);
  EXPECT_EQ(evaluated, model);
  for (const char* cause : {"compute", "tensor_parallel", "pipeline_bubble", "optimizer"})
    EXPECT_NE(r.out.find(std::string("\n  ") + cause + " "), std::string::npos) << cause << "\n" << r.out;
}

}  // namespace
