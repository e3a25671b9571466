// `tessera calibrate`: the table it prints, the file it writes, and one line naming the option
// and its value for every bad input (app::InputError: exit status 2).
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "command_outcome.h"
#include "calibration/kernel_table.h"
#include "sc_main/calibrate_command.h"
#include "sc_main/input_error.h"
#include "trace_builder.h"

using namespace tessera;
using tessera::calibration::testing::read_text;
using tessera::calibration::testing::temp_dir;

namespace {

const std::string kRank0 = std::string(TESSERA_CALIBRATION_DATA) + "/megatron_tp8_a100/rank0.json.gz";
const std::string kDlrm = std::string(TESSERA_CALIBRATION_DATA) + "/dlrm_v100/worker0_step_12.json.gz";

using command_testing::Outcome;

Outcome calibrate(const std::vector<std::string>& args) {
  return command_testing::run_command(app::command_calibrate, args);
}

TEST(CalibrateCommand, PrintsTheTableAndWritesTheFile) {
  const std::string file = temp_dir() + "/megatron.yaml";
  const Outcome r = calibrate({"--kineto", kRank0, "--out", file});
  ASSERT_EQ(r.status, 0) << r.error;
  std::cout << r.out;
  EXPECT_NE(r.out.find("# tessera calibrate: 1 trace, GPU A100-SXM4-80GB"), std::string::npos);
  EXPECT_NE(r.out.find("skipped: 84 NCCL, 6 memcpy, 81 memset, 80 no input shapes recorded"), std::string::npos);
  // The QKV GEMM: 2 * 8192 * 1536 * 4096 flops in 400.05 us = 257.7 TFLOP/s.
  EXPECT_NE(r.out.find("gemm            fp16  m 8192, n 1536, k 4096                    400.1       40    257.7"),
            std::string::npos);
  const calibration::KernelTable table = calibration::KernelTable::load(file);
  EXPECT_EQ(table.gpu(), "A100-SXM4-80GB");
  EXPECT_EQ(table.source(), "kineto: rank0.json.gz");
  EXPECT_GE(table.kernels().size(), 7u);
  EXPECT_NE(read_text(file).find("{kind: gemm, dtype: fp16, m: 8192, n: 1536, k: 4096, us: 400.050, samples: 40}"),
            std::string::npos);
}

TEST(CalibrateCommand, Help) {
  const Outcome r = calibrate({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--kineto"), std::string::npos);
  EXPECT_NE(r.out.find("--out"), std::string::npos);
  EXPECT_NE(r.out.find("--gpu"), std::string::npos);
}

TEST(CalibrateCommand, BadInputNamesTheOptionAndValue) {
  const std::string out = temp_dir() + "/c.yaml";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--out", out}, "--kineto: missing"},
      {{"--kineto", kRank0}, "--out: missing"},
      {{"--kineto", kRank0, "--out", "/nonexistent/dir/c.yaml"}, "--out /nonexistent/dir/c.yaml: cannot write (no folder /nonexistent/dir)"},
      {{"--kineto", "/nonexistent/t.json", "--out", out}, "--kineto /nonexistent/t.json: cannot read (no such file)"},
      {{"--kineto", kDlrm, "--out", out},
       "--kineto " + kDlrm + ": deviceProperties[0].name: unknown GPU (got 'Tesla V100-SXM2-32GB'"},
      {{"--kineto", kDlrm, "--out", out, "--gpu", "V100"}, "--gpu V100: unknown GPU type (known: A100-SXM4-80GB"},
      {{"--kineto", kRank0, "--out", out, "--gpu", "H100-SXM5-80GB"},
       "recorded on 'NVIDIA A100-SXM4-80GB' (A100-SXM4-80GB), not on H100-SXM5-80GB"},
      {{"--kineto", kRank0, "--out", out, "--colour"}, "colour"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome r = calibrate(args);
    EXPECT_NE(r.error.find(expected), std::string::npos) << expected << "\n got: " << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }
}

TEST(CalibrateCommand, NamedGpuImportsAnUnknownDevice) {
  const std::string out = temp_dir() + "/dlrm.yaml";
  const Outcome r = calibrate({"--kineto", kDlrm, "--out", out, "--gpu", "A100-SXM4-80GB"});
  ASSERT_EQ(r.status, 0) << r.error;
  EXPECT_NE(r.out.find("(Tesla V100-SXM2-32GB -> A100-SXM4-80GB)"), std::string::npos) << r.out;
  EXPECT_EQ(calibration::KernelTable::load(out).gpu(), "A100-SXM4-80GB");
}

}  // namespace
