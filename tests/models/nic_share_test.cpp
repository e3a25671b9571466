// A GPU reaches the network through its own share of its nearest NICs, as NCCL gives each GPU
// its NIC(s): with G of a node's GPUs in a collective across nodes, no ring reports more bus
// bandwidth than those GPUs' NICs carry at line rate (nccl-tests' n nodes x G GPUs, the usual
// NIC-to-NIC measurement at G = 1). A property over platforms, node counts and G.
#include <gtest/gtest.h>

#include <string>

#include "models/collectives/tuner.h"
#include "sc_main/collective_command.h"
#include "platforms/platform_file.h"
#include "tests/support/child_process.h"

namespace tessera {
namespace {

using testing::run_in_child;

constexpr uint64_t MiB = 1ull << 20;

struct Case {
  std::string platform;
  int nodes, gpus_per_node;
  const char* op;
};

// busbw of a 256 MiB ring collective in flow fidelity, and what the members' NICs carry.
nlohmann::json measure(const Case& c) {
  return run_in_child([c] {
    const platforms::PlatformConfig p = platforms::load_platform(c.platform, {"nodes=" + std::to_string(c.nodes)});
    app::SweepSettings s;
    s.op = c.op;
    s.min_bytes = s.max_bytes = 256 * MiB;
    s.gpus_per_node = c.gpus_per_node;
    s.options.fidelity = platforms::Fidelity::Flow;
    s.options.collectives.algorithm = models::CollectiveAlgorithm::Ring;
    const auto rows = app::run_sweep(p, s);
    const double nics_per_gpu = double(p.node.nics.count) / p.node.gpus;
    const double line_gbps = p.node.nics.line_rate_gbit_per_s / 8.0;
    return nlohmann::json{{"busbw", rows.at(0).busbw_gbps},
                          {"members", app::sweep_members(p, c.gpus_per_node).size()},
                          {"nic_limit", c.gpus_per_node * nics_per_gpu * line_gbps}};
  });
}

TEST(NicShare, NoRingAcrossNodesBeatsItsGpusNicsLineRate) {
  for (const std::string platform : {"dgx-a100", "dgx-h100"})
    for (int nodes : {2, 4})
      for (int g : {1, 2, 8})
        for (const char* op : {"allreduce", "allgather"}) {
          const Case c{platform, nodes, g, op};
          const nlohmann::json r = measure(c);
          ASSERT_FALSE(r.contains("error")) << r.dump();
          const std::string what = platform + " " + std::to_string(nodes) + " x " + std::to_string(g) + " " + op;
          EXPECT_EQ(r["members"].get<size_t>(), size_t(nodes * g)) << what;
          // A ring across nodes sends each member's share through the node's exits: bus
          // bandwidth is bounded by the NICs of the node's members (NCCL's busbw model).
          EXPECT_LE(r["busbw"].get<double>(), r["nic_limit"].get<double>() * 1.001) << what << " " << r.dump();
          EXPECT_GT(r["busbw"].get<double>(), 0.5 * r["nic_limit"].get<double>()) << what << " " << r.dump();
        }
}

}  // namespace
}  // namespace tessera
