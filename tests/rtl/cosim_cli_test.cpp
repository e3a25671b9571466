// Co-simulation from the command line, as a user runs it: a GPT iteration with RTL arbiters on
// every NVSwitch port against the C++ arbiters, the cost report, the waveform, a broken block's
// exit status, and the errors of a bad request (or of a build without Verilator).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_tessera.h"

namespace {

using cli_testing::tessera;

#ifdef TESSERA_RTL_BUILT

TEST(CosimCli, GptIterationWithRtlArbitersMatchesTheCxxArbitersAndReportsTheCost) {
  // The default run: GPT-3 1.3B, data parallel on one DGX H100 node.
  const std::string report = cli_testing::temp_dir() + "/rtl_report.json";
  const auto r = tessera("run --rtl-arbiter nvswitch --report " + report);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("RTL co-simulation     rr_arbiter (arbiter) at 8 ports"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("co-simulation cost    wall "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" without RTL ("), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(cli_testing::read_file(report));
  const nlohmann::json& rtl = j["rtl"];
  const double with = j["iteration_time_s"], without = rtl["iteration_time_without_rtl_s"];
  EXPECT_NEAR(with, without, 0.001 * without);
  EXPECT_GT(rtl["slowdown"].get<double>(), 0.5);
  EXPECT_GT(rtl["wall_time_without_rtl_s"].get<double>(), 0.0);
  // One cycle per grant (the block grants in the cycle it is asked) and a reset cycle per port;
  // the clocks are gated otherwise.
  EXPECT_EQ(rtl["ports"], 8);
  EXPECT_EQ(rtl["cycles"].get<uint64_t>(), rtl["decisions"].get<uint64_t>() + 8);
  EXPECT_GT(rtl["gated_fraction"].get<double>(), 0.99);
  EXPECT_GT(rtl["cycles_per_wall_s"].get<double>(), 0.0);
  EXPECT_EQ(rtl["blocks"]["rr_arbiter"]["ports"], 8);
}

TEST(CosimCli, WritesTheWaveformOfTheBlocksAndTheirPorts) {
  const std::string vcd = cli_testing::temp_dir() + "/ports.vcd";
  const auto r = tessera("collective --platform dgx-h100 --op alltoall -b 1M -e 1M --rtl-arbiter nvswitch --vcd " + vcd);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = cli_testing::read_file(vcd);
  for (const char* signal : {"clk", "rst_n", "req", "credit_ok", "gnt", "port_credits", "port_queued",
                             "port_wire_busy", "port_granted_input"})
    EXPECT_NE(text.find(std::string(" ") + signal + " "), std::string::npos) << signal;
  EXPECT_NE(text.find("out3_rtl"), std::string::npos);
  EXPECT_NE(text.find("$timescale"), std::string::npos);
  EXPECT_NE(text.find("\n#"), std::string::npos);  // value changes over time
}

TEST(CosimCli, ABrokenBlockEndsTheRunWithStatus6NamingBlockCycleAndRule) {
  const auto r = tessera("run -q --rtl-arbiter nvswitch:rr_arbiter_faulty_two_grants --rtl-reference false");
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_NE(r.err.find("tessera: error: RTL block rr_arbiter_faulty_two_grants at platform.node0.nvswitch0-3.out"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broke the arbiter contract at cycle "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": one grant per cycle: gnt = "), std::string::npos) << r.err;
}

TEST(CosimCli, APlatformFileNamesTheVerilogFile) {
  const std::string platform = cli_testing::write_file(
      "rtl-node.yaml", std::string("gpu: H100-SXM5-80GB\nnode:\n  nvlink: {switches: 1}\n  nvswitch:\n") +
                           "    arbiter: rtl:" + TESSERA_SOURCE_DIR + "/models/rtl/rr_arbiter.sv\n");
  const auto r = tessera("collective --platform " + platform + " --op allreduce -b 1M -e 1M");
  EXPECT_EQ(r.status, 0) << r.err;
  // A Verilog file that no block was verilated from.
  const std::string other = cli_testing::write_file("mine.sv", "module mine; endmodule\n");
  const auto bad = tessera("collective --platform dgx-h100 --set node.nvswitch.arbiter=rtl:" + other);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("was not verilated into this build: add tessera_rtl_block(NAME KIND arbiter SOURCES"),
            std::string::npos) << bad.err;
}

TEST(CosimCli, DescribeNamesTheBlocksAtPorts) {
  const auto r = tessera("describe --rtl-arbiter nvswitch --set node.nvswitch.arbiter_ports=[0,3] "
                         "--set node.nics.rate_limiter=rtl --set node.nics.rate_limit_gbit_per_s=100");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("rtl blocks (docs/cosim.md):\n  node.nvswitch.arbiter: rr_arbiter (arbiter, PORTS 64, "
                       "rr_arbiter from "),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("models/rtl/rr_arbiter.sv); ports 0, 3; 16-byte flits\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  node.nics.rate_limiter: token_bucket (rate limiter, token_bucket from "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("; 100 Gb/s, burst 1048576 bytes; 64-byte flits\n"), std::string::npos) << r.out;
}

TEST(CosimCli, BadRequestsAreInputErrors) {
  auto r = tessera("run --rtl-arbiter nvswitch:no_such_block");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--rtl-arbiter: node.nvswitch.arbiter: no RTL block named 'no_such_block' in this build"),
            std::string::npos) << r.err;
  r = tessera("run --rtl-arbiter somewhere");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--rtl-arbiter somewhere: expected nvswitch, network or all"), std::string::npos) << r.err;
  r = tessera("run --rtl-arbiter nvswitch:token_bucket");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("RTL block token_bucket is a rate limiter, not a arbiter"), std::string::npos) << r.err;
  r = tessera("run --rtl-arbiter nvswitch --fidelity flow");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--fidelity flow: the platform has RTL blocks at ports"), std::string::npos) << r.err;
  r = tessera("run --vcd " + cli_testing::temp_dir() + "/x.vcd");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--vcd: the run has no RTL block to trace"), std::string::npos) << r.err;
  r = tessera("run --set node.nvswitch.arbiter=verilog");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set node.nvswitch.arbiter: unknown choice 'verilog'"), std::string::npos) << r.err;
}

#else

TEST(CosimCli, ABuildWithoutVerilatorSaysWhatIsMissing) {
  const auto r = tessera("run --rtl-arbiter nvswitch");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("RTL co-simulation not built: install Debian package verilator and reconfigure"),
            std::string::npos) << r.err;
}

#endif

}  // namespace
