// CollNet (InfiniBand SHARP): the network switches add the nodes' contributions up, so a NIC
// carries a GPU's shard once each way instead of a ring's 2(n-1)/n of it. On an ideal fabric
// the time is that closed form; every rank gets the bytes its schedule owes it; the switches
// pass one partial sum up the tree; on a shipped platform enabling SHARP makes a multi-node
// all-reduce faster and the tuner takes it.
#include <gtest/gtest.h>

#include <string>

#include "models/collectives/tuner.h"
#include "sc_main/collective_command.h"
#include "tests/support/child_process.h"
#include "tests/support/jobs.h"
#include "tests/support/platform_configs.h"

namespace tessera {
namespace {

using models::CollectiveAlgorithm;
using testing::ideal_collectives;
using testing::one_collective;
using testing::run_in_child;
using workloads::CollectiveKind;

constexpr uint64_t MiB = 1ull << 20;
constexpr double kNicGBps = 50.0;  // 400 Gb/s

// `nodes` nodes of `gpus` GPUs, each GPU with its own NIC, on a two-tier fat tree of radix
// `radix` whose switches reduce; no packet overhead anywhere, NVLink and PCIe far faster than
// the NICs, so the NICs bound the collectives.
platforms::PlatformConfig ideal_cluster(int nodes, int gpus, int radix) {
  platforms::PlatformConfig c = testing::single_gpu_nodes(nodes, platforms::Topology::FatTree, radix, 1.0, 2);
  c.node.gpus = gpus;
  c.node.nics.count = gpus;
  c.node.nics.line_rate_gbit_per_s = 8 * kNicGBps;
  c.node.nics.header_bytes = 0;
  c.network.link = {kNicGBps, 50.0, 0, 0};
  c.network.in_network_reduction = true;
  c.node.pcie.link = {800.0, 50.0, 0, 0};
  c.node.pcie.host_link = c.node.pcie.link;
  if (gpus > 1) {
    c.gpu.nvlink_ports = 1;
    c.gpu.nvlink_port_bandwidth_gbps = 1600.0;
    c.node.nvlink.switches = 1;
    c.node.nvlink.links_per_switch = {1};
    c.node.nvlink.link = {1600.0, 150.0, 0, 0};
  }
  c.validate();
  return c;
}

struct Traffic {
  nlohmann::json run;
  std::map<std::string, uint64_t> nic_up;  // NIC -> network switch, by link
  uint64_t switch_out = 0;                 // everything network switches sent
};

Traffic simulate(const platforms::PlatformConfig& p, const workloads::Job& job,
                 const models::CollectiveEngineConfig& c) {
  Traffic t;
  t.run = run_in_child([&] {
    app::SimulationOptions o;
    o.collectives = c;
    return testing::summarize(app::simulate(p, job, o));
  });
  if (t.run.contains("error")) return t;
  for (const auto& [name, bytes] : t.run["link_bytes"].items()) {
    if (name.rfind("node", 0) == 0 && name.find(".nic") != std::string::npos && name.find(".up") != std::string::npos)
      t.nic_up[name] = bytes.get<uint64_t>();
    else if (name.find(".up") != std::string::npos)
      t.switch_out += bytes.get<uint64_t>();
  }
  return t;
}

TEST(CollNet, EachNicCarriesTheMessageOnceInsteadOfARingsShare) {
  // Four one-GPU nodes on radix-4 leaves (two nodes each, two spines). CollNet: every NIC sends
  // S up and receives the sum, S, so the time is S/B; the leaves add their two members up and
  // send one S to the root spine, which sends one S back to each leaf: the switches send
  // 2S (leaves up) + 2S (spine down) + 4S (leaves to NICs). A ring sends 2(n-1)/n S per NIC.
  const int n = 4;
  const uint64_t S = 64 * MiB;
  const double B = kNicGBps * 1e9;
  const auto p = ideal_cluster(n, 1, 4);
  const auto job = one_collective(n, CollectiveKind::AllReduce, S);
  const Traffic collnet = simulate(p, job, ideal_collectives(CollectiveAlgorithm::CollNet, 1));
  ASSERT_FALSE(collnet.run.contains("error")) << collnet.run.dump();
  ASSERT_FALSE(collnet.run["deadlocked"].get<bool>()) << collnet.run["deadlock"];
  ASSERT_EQ(collnet.nic_up.size(), size_t(n));
  for (const auto& [link, bytes] : collnet.nic_up) EXPECT_EQ(bytes, S) << link;
  EXPECT_EQ(collnet.switch_out, 8 * S);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(collnet.run["sent"][rank].get<uint64_t>(), S);
    EXPECT_EQ(collnet.run["received"][rank].get<uint64_t>(), S);
  }
  // The pipeline's fill: a chunk (256 KiB: 64 MiB over 256 chunks) stored and forwarded at
  // each of the six network-rate hops, plus path latencies.
  const double fill = 6 * (256.0 * 1024 / B) + 10e-6;
  const double t = collnet.run["iteration_time_s"];
  EXPECT_GE(t, S / B);
  EXPECT_LE(t, S / B * 1.01 + fill);

  const Traffic ring = simulate(p, job, ideal_collectives(CollectiveAlgorithm::Ring, 1));
  ASSERT_FALSE(ring.run.contains("error")) << ring.run.dump();
  for (const auto& [link, bytes] : ring.nic_up) EXPECT_EQ(bytes, 2 * (n - 1) * (S / n)) << link;
  const double ring_time = ring.run["iteration_time_s"];
  EXPECT_NEAR(ring_time, 2.0 * (n - 1) / n * S / B, 0.03 * ring_time);
}

TEST(CollNet, EveryRankGetsItsShardFromTheNetworkAndTheNodeTheRest) {
  // Four nodes of two GPUs. Direct inside the node: S/2 to the peer, the shard (S/2) through
  // the NIC, S/2 back to the peer: 3/2 S each way. With NVLS inside the node: S into the
  // switch (both shards), the shard through the NIC, the shard into the switch for the
  // multicast: 2S sent; S/2 sum + S/2 from the network + S multicast received: 2S.
  const int nodes = 4, gpus = 2, n = nodes * gpus;
  const uint64_t S = 32 * MiB;
  for (const bool nvls : {false, true}) {
    auto p = ideal_cluster(nodes, gpus, 8);
    p.node.nvlink.in_switch_reduction = nvls;
    auto engine = ideal_collectives(CollectiveAlgorithm::CollNet, gpus);
    engine.tuner.nvls_efficiency = 1.0;
    const Traffic r = simulate(p, one_collective(n, CollectiveKind::AllReduce, S), engine);
    ASSERT_FALSE(r.run.contains("error")) << r.run.dump();
    ASSERT_FALSE(r.run["deadlocked"].get<bool>()) << r.run["deadlock"];
    const uint64_t each = nvls ? 2 * S : 3 * S / 2;
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(r.run["sent"][rank].get<uint64_t>(), each) << "nvls " << nvls << " rank " << rank;
      EXPECT_EQ(r.run["received"][rank].get<uint64_t>(), each) << "nvls " << nvls << " rank " << rank;
    }
    // Every GPU has its own NIC, which carries its shard once.
    ASSERT_EQ(r.nic_up.size(), size_t(n));
    for (const auto& [link, bytes] : r.nic_up) EXPECT_EQ(bytes, S / gpus) << link;
  }
}

TEST(CollNet, NeedsSwitchesThatReduce) {
  auto p = ideal_cluster(4, 1, 4);
  p.network.in_network_reduction = false;
  const models::Tuner tuner(models::TunerConfig{}, platforms::fabric_facts(p));
  const models::CommunicatorShape shape = models::communicator_shape({0, 1, 2, 3}, 1);
  EXPECT_NE(tuner.unsupported(protocol::CollectiveOp::AllReduce, CollectiveAlgorithm::CollNet,
                              models::CollectiveProtocol::Automatic, shape),
            "");
  EXPECT_NE(tuner.choose(protocol::CollectiveOp::AllReduce, 1ull << 30, shape).algorithm, CollectiveAlgorithm::CollNet);
  p.network.in_network_reduction = true;
  const models::Tuner sharp(models::TunerConfig{}, platforms::fabric_facts(p));
  EXPECT_EQ(sharp.unsupported(protocol::CollectiveOp::AllReduce, CollectiveAlgorithm::CollNet,
                              models::CollectiveProtocol::Automatic, shape),
            "");
  EXPECT_NE(sharp.unsupported(protocol::CollectiveOp::AllGather, CollectiveAlgorithm::CollNet,
                              models::CollectiveProtocol::Automatic, shape),
            "");
  // One node: nothing for the network to reduce.
  EXPECT_NE(sharp.unsupported(protocol::CollectiveOp::AllReduce, CollectiveAlgorithm::CollNet,
                              models::CollectiveProtocol::Automatic, models::communicator_shape({0, 1}, 2)),
            "");
}

TEST(CollNet, EnablingSharpSpeedsUpAMultiNodeAllReduce) {
  // Four DGX A100 (8 x 200 Gb/s, no NVLS), 256 MiB all-reduce, the tuner choosing: without
  // SHARP the best is hierarchical (NVLink ring in the node, NIC ring across); with it, the
  // NICs carry a shard once each way and the all-reduce is bound by NVLink alone.
  auto sweep = [](bool sharp) {
    return run_in_child([sharp] {
      platforms::PlatformConfig p = platforms::load_platform(
          "dgx-a100", {"nodes=4", std::string("network.in_network_reduction=") + (sharp ? "true" : "false")});
      app::SweepSettings s;
      s.min_bytes = s.max_bytes = 256 * MiB;
      const auto rows = app::run_sweep(p, s);
      return nlohmann::json{{"time_us", rows.at(0).time_us}, {"algorithm", rows.at(0).algorithm}};
    });
  };
  const nlohmann::json off = sweep(false), on = sweep(true);
  ASSERT_FALSE(off.contains("error")) << off.dump();
  ASSERT_FALSE(on.contains("error")) << on.dump();
  EXPECT_NE(off["algorithm"], "collnet");
  EXPECT_EQ(on["algorithm"], "collnet");
  EXPECT_LT(on["time_us"].get<double>(), 0.9 * off["time_us"].get<double>())
      << "without SHARP " << off.dump() << ", with " << on.dump();
}

}  // namespace
}  // namespace tessera
