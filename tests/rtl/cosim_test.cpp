// RTL co-simulation in whole runs: an RTL arbiter on a switch's ports gives the C++ arbiter's
// grants and completion times (incast, permutation, all-to-all in packet fidelity), a broken
// arbiter is caught by the transactor naming the block, the cycle and the rule, and a GPT
// iteration on one node with RTL arbiters on every NVSwitch port matches the C++ one.
// Each simulation runs in a forked child.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "platforms/platform_file.h"
#include "tests/rtl/cosim_scenario.h"
#include "tests/rtl/reference_arbiter.h"
#include "tests/support/platform_configs.h"

namespace tessera {
namespace {

using platforms::load_platform;
using platforms::PlatformConfig;
using testing::CosimRun;
using testing::run_recorded;

constexpr uint64_t MiB = 1ull << 20;

PlatformConfig with_rtl(PlatformConfig p, const std::string& block = "rtl") {
  p.node.nvswitch.arbiter = block;
  p.validate();
  return p;
}

// One DGX H100 node: the NVSwitch chips are one striped crossbar of 8 ports.
PlatformConfig node() { return load_platform("dgx-h100"); }

std::vector<std::pair<int, int>> incast(int n, int to) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i)
    if (i != to) pairs.emplace_back(i, to);
  return pairs;
}

std::vector<std::pair<int, int>> permutation(int n, int shift) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i) pairs.emplace_back(i, (i + shift) % n);
  return pairs;
}

// Each port's grants in order (the order between ports at one picosecond is the kernel's).
std::map<std::string, std::vector<nlohmann::json>> by_port(const nlohmann::json& grants) {
  std::map<std::string, std::vector<nlohmann::json>> ports;
  for (const auto& g : grants) ports[g["port"].get<std::string>()].push_back(g);
  return ports;
}

// The two runs grant the same chunks in the same order at every port (at the same picosecond
// unless `pick_times` is false), and every rank finishes every op at the same time.
void expect_same_run(const CosimRun& cxx, const CosimRun& rtl, bool pick_times = true) {
  ASSERT_TRUE(cxx.ok()) << cxx.error();
  ASSERT_TRUE(rtl.ok()) << rtl.error();
  EXPECT_EQ(cxx.summary["iteration_time_s"], rtl.summary["iteration_time_s"]);
  EXPECT_EQ(cxx.summary["finish_s"], rtl.summary["finish_s"]);
  EXPECT_EQ(cxx.summary["spans"], rtl.summary["spans"]);
  const auto a = by_port(cxx.summary["grants"]), b = by_port(rtl.summary["grants"]);
  ASSERT_EQ(a.size(), b.size());
  size_t differ = 0, compared = 0;
  for (const auto& [port, grants] : a) {
    ASSERT_TRUE(b.count(port)) << port;
    const auto& other = b.at(port);
    ASSERT_EQ(grants.size(), other.size()) << port;
    for (size_t i = 0; i < grants.size(); ++i, ++compared) {
      nlohmann::json x = grants[i], y = other[i];
      if (!pick_times) x.erase("ps"), y.erase("ps");
      if (x != y && differ++ < 5)
        ADD_FAILURE() << port << " grant " << i << ": C++ " << grants[i] << ", RTL " << other[i];
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << compared << " grants";
  EXPECT_GT(compared, 0u);
}

TEST(RtlArbiter, IncastGivesTheCxxGrantsCycleForCycle) {
  const PlatformConfig p = node();
  const workloads::Job job = testing::transfers(8, incast(8, 0), 4 * MiB);
  const CosimRun cxx = run_recorded(p, job), rtl = run_recorded(with_rtl(p), job);
  expect_same_run(cxx, rtl);
  ASSERT_TRUE(rtl.ok());
  // Every NVSwitch port has its block; the incast's port granted every chunk for GPU 0.
  EXPECT_EQ(rtl.summary["rtl"].size(), 8u);
  EXPECT_GT(rtl.summary["rtl"][0]["decisions"].get<uint64_t>(), 7u * 4 * MiB / (128 * 1024) - 1);
}

TEST(RtlArbiter, PermutationGivesTheCxxGrantsCycleForCycle) {
  const PlatformConfig p = node();
  const workloads::Job job = testing::transfers(8, permutation(8, 3), 4 * MiB);
  expect_same_run(run_recorded(p, job), run_recorded(with_rtl(p), job));
}

TEST(RtlArbiter, AllToAllGivesTheCxxGrantsCycleForCycle) {
  const PlatformConfig p = node();
  const workloads::Job job = testing::one_collective(8, workloads::CollectiveKind::AllToAll, 16 * MiB);
  expect_same_run(run_recorded(p, job), run_recorded(with_rtl(p), job));
}

TEST(RtlArbiter, IncastWithBackpressureGivesTheCxxGrants) {
  // Each GPU buffers one chunk: a chunk waits for the one before it to arrive before it leaves
  // the switch, so the RTL ports run out of credits (credit_ok low) at every chunk. The C++
  // port picks a chunk when its wire frees and holds it until a slot frees; the RTL arbiter
  // picks when the slot frees (a credit returns), among the inputs waiting then: the same
  // inputs here (all seven always wait), so the same grants in the same order, each chunk on
  // the wire at the same picosecond, every transfer done at the same time. Only the moment of
  // the pick differs, by the wait for the credit.
  PlatformConfig p = node();
  p.gpu_buffer_bytes = 128 * 1024;
  const workloads::Job job = testing::transfers(8, incast(8, 0), 2 * MiB);
  expect_same_run(run_recorded(p, job), run_recorded(with_rtl(p), job), false);
}

TEST(RtlArbiter, NetworkSwitchPortsFinishWithinAFlitTimePerPacket) {
  // Four single-GPU nodes on a two-tier fat tree, a permutation across the leaves: the network
  // switches' ports on rr_arbiter, then only port 0 of each. Nodes 0 and 1 (and 2 and 3) are
  // symmetric, so their chunks reach their leaf's uplink at the same picosecond; which goes
  // first is the kernel's order of simultaneous events, which the transactor's delta cycles can
  // change (docs/cosim.md). The transfers then end within one flit time (64 B at 50 GB/s) per
  // packet and RTL port crossed of the C++ times, and the run ends at the same picosecond.
  const uint64_t S = 4 * MiB;
  const PlatformConfig p = testing::single_gpu_nodes(4, platforms::Topology::FatTree, 4, 1.0, 2);
  const workloads::Job job = testing::transfers(4, permutation(4, 2), S);
  PlatformConfig all = p, first = p;
  all.network.switch_arbiter.arbiter = "rtl";
  first.network.switch_arbiter.arbiter = "rtl";
  first.network.switch_arbiter.ports = {0};
  const CosimRun cxx = run_recorded(p, job), rtl = run_recorded(all, job), one = run_recorded(first, job);
  ASSERT_TRUE(cxx.ok()) << cxx.error();
  ASSERT_TRUE(rtl.ok()) << rtl.error();
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(cxx.summary["iteration_time_s"], rtl.summary["iteration_time_s"]);
  const double flit = 64 / 50e9, packets = double(S) / (128 * 1024), hops = 3;
  for (size_t r = 0; r < 4; ++r) {
    const double a = cxx.summary["finish_s"][r], b = rtl.summary["finish_s"][r], c = one.summary["finish_s"][r];
    EXPECT_NEAR(b, a, packets * hops * flit) << "rank " << r;
    EXPECT_NEAR(c, a, packets * hops * flit) << "rank " << r;
  }
  // Every port of every network switch, then port 0 of each.
  size_t network = 0, first_ports = 0;
  for (const auto& port : rtl.summary["rtl"]) network += port["port"].get<std::string>().rfind("platform.network.", 0) == 0;
  for (const auto& port : one.summary["rtl"]) first_ports += port["port"].get<std::string>().find(".out0") != std::string::npos;
  EXPECT_EQ(network, rtl.summary["rtl"].size());
  EXPECT_EQ(network, 8u);  // two leaves of three ports, a spine of two
  EXPECT_EQ(first_ports, one.summary["rtl"].size());
  EXPECT_EQ(first_ports, 3u);
}

// --- Where simultaneous events meet ---------------------------------------------------------

// An NVLS all-reduce: the switch reduces and multicasts, and many chunks reach it at the same
// picosecond. The verilated block and a SystemC pin-level model of the same arbiter through the
// same transactor grant identically; the port's own C++ arbiter decides a few delta cycles
// earlier within the same picosecond, so the kernel may take simultaneous arrivals in another
// order (which contribution completes a sum, which multicast goes first), and the run differs
// from the C++ one by that order, not by the arbitration (docs/cosim.md).
TEST(RtlArbiter, NvlsAllReduceGivesThePinLevelReferenceGrants) {
  testing::register_reference_arbiter();
  const PlatformConfig p = node();
  app::SimulationOptions o;
  o.collectives.algorithm = models::CollectiveAlgorithm::Nvls;
  const workloads::Job job = testing::one_collective(8, workloads::CollectiveKind::AllReduce, 16 * MiB);
  const CosimRun reference = run_recorded(with_rtl(p, "rtl:reference_rr_arbiter"), job, o);
  const CosimRun rtl = run_recorded(with_rtl(p), job, o);
  expect_same_run(reference, rtl);
  const CosimRun cxx = run_recorded(p, job, o);
  ASSERT_TRUE(cxx.ok()) << cxx.error();
  const double a = cxx.summary["iteration_time_s"], b = rtl.summary["iteration_time_s"];
  EXPECT_NEAR(b, a, 0.01 * a);
}

// --- A broken block is caught ---------------------------------------------------------------

// The run's error with `block` on the NVSwitch ports.
std::string failure_with(const std::string& block, PlatformConfig p, const workloads::Job& job) {
  const CosimRun r = run_recorded(with_rtl(std::move(p), "rtl:" + block), job);
  EXPECT_FALSE(r.ok()) << block << " was not caught";
  return r.error();
}

TEST(RtlContract, TwoGrantsInOneCycleAreCaught) {
  const std::string e = failure_with("rr_arbiter_faulty_two_grants", node(), testing::transfers(8, incast(8, 0), MiB));
  EXPECT_NE(e.find("RTL block rr_arbiter_faulty_two_grants at platform.node0.nvswitch0-3.out0"), std::string::npos) << e;
  EXPECT_NE(e.find("broke the arbiter contract at cycle "), std::string::npos) << e;
  // Input 1 goes first (it arrived first); at the next chunk inputs 2 and 3 are granted together.
  EXPECT_NE(e.find("at cycle 3 "), std::string::npos) << e;
  EXPECT_NE(e.find("one grant per cycle: gnt = 0xc (inputs 2, 3), req = 0xfc (inputs 2, 3, 4, 5, 6, 7)"),
            std::string::npos) << e;
}

TEST(RtlContract, AGrantWithoutARequestIsCaught) {
  const std::string e =
      failure_with("rr_arbiter_faulty_grant_without_request", node(), testing::transfers(8, incast(8, 0), MiB));
  EXPECT_NE(e.find("RTL block rr_arbiter_faulty_grant_without_request at platform.node0.nvswitch0-3.out0"),
            std::string::npos) << e;
  // The first edge after the reset cycle: input 0 granted while only input 1 requests.
  EXPECT_NE(e.find("at cycle 2 "), std::string::npos) << e;
  EXPECT_NE(e.find("a grant goes to a requesting input: gnt = 0x1 (input 0), req = 0x2 (input 1)"),
            std::string::npos) << e;
}

TEST(RtlContract, AGrantIgnoringCreditsIsCaught) {
  // With one chunk of buffer per GPU the port runs out of credits at its second chunk.
  PlatformConfig p = node();
  p.gpu_buffer_bytes = 128 * 1024;
  const std::string e = failure_with("rr_arbiter_faulty_ignores_credits", p, testing::transfers(8, incast(8, 0), MiB));
  EXPECT_NE(e.find("RTL block rr_arbiter_faulty_ignores_credits at platform.node0.nvswitch0-3.out0"), std::string::npos)
      << e;
  EXPECT_NE(e.find("no grant without a downstream credit: gnt = "), std::string::npos) << e;
  EXPECT_NE(e.find("while credit_ok = 0"), std::string::npos) << e;
}

TEST(RtlContract, AnArbiterThatNeverGrantsIsCaught) {
  const std::string e = failure_with("rr_arbiter_faulty_never_grants", node(), testing::transfers(8, incast(8, 0), MiB));
  EXPECT_NE(e.find("RTL block rr_arbiter_faulty_never_grants at platform.node0.nvswitch0-3.out0"), std::string::npos) << e;
  // The reset cycle, then 1025 edges with requests and a credit (the clock runs while they wait).
  EXPECT_NE(e.find("at cycle 1026 "), std::string::npos) << e;
  EXPECT_NE(e.find("a request with a credit is granted: req = 0xfe (inputs 1, 2, 3, 4, 5, 6, 7) and credit_ok = 1 for 1025 cycles"),
            std::string::npos) << e;
}

TEST(RtlContract, TheCorrectBlockPassesWhereTheBrokenOnesFail) {
  PlatformConfig p = node();
  p.gpu_buffer_bytes = 128 * 1024;
  const CosimRun r = run_recorded(with_rtl(p), testing::transfers(8, incast(8, 0), MiB));
  EXPECT_TRUE(r.ok()) << r.error();
}

// --- The rate limiter --------------------------------------------------------------------------

// Nodes of one GPU and one 400 Gb/s NIC on a fat tree; node 0 receives.
PlatformConfig single_gpu_nodes(int nodes) {
  return testing::single_gpu_nodes(nodes, platforms::Topology::FatTree, 16, 1.0, 2);
}

PlatformConfig rate_limited(PlatformConfig p, double gbit_per_s) {
  p.node.nics.rate_limiter = "rtl";
  p.node.nics.rate_limit_gbit_per_s = gbit_per_s;
  p.validate();
  return p;
}

// Payload bytes/s of `gbit_per_s` on the wire of a NIC (MTU packets with their headers).
double payload_rate(const PlatformConfig& p, double gbit_per_s) {
  const auto& n = p.node.nics;
  return gbit_per_s / 8 * 1e9 * n.mtu_bytes / (n.mtu_bytes + n.header_bytes);
}

TEST(RtlRateLimiter, CapsAnIncastAtTheConfiguredRate) {
  // Four senders, each on its own node, to node 0. Unlimited, they share the receiver's NIC
  // (400 Gb/s). Limited to 50 Gb/s per NIC, each sends at 50 Gb/s after its bucket's burst.
  const uint64_t S = 8 * MiB;
  PlatformConfig p = single_gpu_nodes(5);
  p.node.nics.rate_limit_burst_bytes = 256 * 1024;
  const workloads::Job job = testing::transfers(5, {{1, 0}, {2, 0}, {3, 0}, {4, 0}}, S);
  const CosimRun free = run_recorded(p, job), limited = run_recorded(rate_limited(p, 50), job);
  ASSERT_TRUE(free.ok()) << free.error();
  ASSERT_TRUE(limited.ok()) << limited.error();
  const double t_free = free.summary["iteration_time_s"], t_limited = limited.summary["iteration_time_s"];
  const double line = payload_rate(p, p.node.nics.line_rate_gbit_per_s);
  EXPECT_NEAR(4 * S / t_free, line, 0.03 * line);  // the receiver's NIC
  // A sender's S payload bytes are S x (MTU + headers) / MTU on the wire; the bucket lets the
  // first 256 KiB go at once, the rest at 50 Gb/s.
  const auto& n = p.node.nics;
  const double wire = double(S) * (n.mtu_bytes + n.header_bytes) / n.mtu_bytes;
  const double shaped = (wire - p.node.nics.rate_limit_burst_bytes) / (50 / 8.0 * 1e9);
  EXPECT_GE(t_limited, shaped);
  EXPECT_NEAR(t_limited, shaped, 0.02 * shaped);
  // The incast's throughput: four times the rate, half the line rate.
  EXPECT_NEAR(4 * S / t_limited, 4 * payload_rate(p, 50), 0.05 * 4 * payload_rate(p, 50));
  // Every chunk of every sender went through a rate limiter.
  uint64_t allowed = 0;
  for (const auto& port : limited.summary["rtl"]) allowed += port["decisions"].get<uint64_t>();
  EXPECT_EQ(allowed, 4 * S / (128 * 1024));
}

TEST(RtlRateLimiter, ALimiterAboveItsRateIsCaught) {
  // A limiter that lets every chunk go: its bucket of 256 KiB is empty after two chunks, and
  // the third leaves without its tokens.
  PlatformConfig p = single_gpu_nodes(2);
  p.node.nics.rate_limit_burst_bytes = 256 * 1024;
  p = rate_limited(p, 50);
  p.node.nics.rate_limiter = "rtl:token_bucket_faulty_above_rate";
  const CosimRun r = run_recorded(p, testing::transfers(2, {{1, 0}}, MiB));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("RTL block token_bucket_faulty_above_rate at platform.node1.nic0.out1 broke the rate "
                           "limiter contract at cycle 4 "),
            std::string::npos) << r.error();
  EXPECT_NE(r.error().find("never above the rate: allowed a chunk of 2081 flits with "), std::string::npos) << r.error();
}

TEST(RtlRateLimiter, ChangesNothingBelowItsRate) {
  // A limit above the line rate: the bucket never runs dry, every chunk leaves when the port
  // would have sent it, and the transfers finish when they do unlimited. (Which of two chunks
  // that reach a leaf switch at the same picosecond goes first is the kernel's order of
  // simultaneous events, which the limiter's delta cycles may change: the finish times are
  // compared as a set.)
  const PlatformConfig p = single_gpu_nodes(5);
  const workloads::Job job = testing::transfers(5, {{1, 0}, {2, 0}, {3, 0}, {4, 0}}, 4 * MiB);
  const CosimRun free = run_recorded(p, job), limited = run_recorded(rate_limited(p, 800), job);
  ASSERT_TRUE(free.ok()) << free.error();
  ASSERT_TRUE(limited.ok()) << limited.error();
  EXPECT_EQ(free.summary["iteration_time_s"], limited.summary["iteration_time_s"]);
  auto sorted = [](const nlohmann::json& j) {
    std::vector<double> v = j.get<std::vector<double>>();
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(free.summary["finish_s"]), sorted(limited.summary["finish_s"]));
  EXPECT_EQ(free.summary["total_link_bytes"], limited.summary["total_link_bytes"]);
}

TEST(RtlRateLimiter, ChangesNothingInsideANode) {
  // NVLink traffic never crosses a NIC: a node's all-reduce is the same with its NICs limited.
  const PlatformConfig p = node();
  const workloads::Job job = testing::one_collective(8, workloads::CollectiveKind::AllReduce, 16 * MiB);
  expect_same_run(run_recorded(p, job), run_recorded(rate_limited(p, 10), job));
}

}  // namespace
}  // namespace tessera
