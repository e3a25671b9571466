// The tuner across nodes: the network's bandwidth and latency come from the platform (NICs,
// PCIe), and the choice among ring, tree, hierarchical and collnet follows the NIC bottleneck
// and NCCL's network latencies as the node count and the size change. Pure cost model, no
// simulation.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "models/collectives/tuner.h"
#include "platforms/platform.h"
#include "platforms/platform_file.h"

namespace tessera {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveProtocol;
using protocol::CollectiveOp;

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

models::Tuner tuner_for(const std::string& platform, bool sharp) {
  const platforms::PlatformConfig c =
      platforms::load_platform(platform, {std::string("network.in_network_reduction=") + (sharp ? "true" : "false")});
  return models::Tuner(models::TunerConfig{}, platforms::fabric_facts(c));
}

// Every GPU of `nodes` nodes of eight.
models::CommunicatorShape world(int nodes) {
  std::vector<int> ranks(size_t(nodes) * 8);
  std::iota(ranks.begin(), ranks.end(), 0);
  return models::communicator_shape(ranks, 8, {}, 8);
}

CollectiveAlgorithm choice(const models::Tuner& t, uint64_t bytes, int nodes) {
  return t.choose(CollectiveOp::AllReduce, bytes, world(nodes)).algorithm;
}

TEST(FabricFacts, TheNetworkIsTheNicsBehindPcie) {
  // DGX H100: a GPU reaches the network through its PCIe gen5 port (63 GB/s at 256/280) and
  // the two 400 Gb/s NICs of its PCIe switch (50 GB/s at 4096/4162 each); a node through 8 NICs.
  const auto h100 = platforms::fabric_facts(platforms::load_platform("dgx-h100"));
  EXPECT_NEAR(h100.gpu_network_bandwidth, 63e9 * 256 / 280, 1e6);
  EXPECT_NEAR(h100.node_network_bandwidth, 8 * 50e9 * 4096 / 4162, 1e6);
  EXPECT_EQ(h100.gpus_per_node, 8);
  EXPECT_GT(h100.network_latency_s, h100.hop_latency_s);
  EXPECT_FALSE(h100.in_network_reduction);
  // No network: nothing across nodes.
  const auto alone = platforms::fabric_facts(platforms::load_platform("dgx-h100", {"network.topology=none"}));
  EXPECT_EQ(alone.node_network_bandwidth, 0);
  EXPECT_FALSE(platforms::fabric_facts(platforms::load_platform(
                   "dgx-h100", {"network.topology=none", "network.in_network_reduction=true"}))
                   .in_network_reduction);
}

// A network step waits for its first chunk to be stored and forwarded over every hop of the
// path: GPU, PCIe switch, NIC, network switch, NIC, PCIe switch, GPU.
double store_and_forward(const models::Tuner& t, int network_steps, double transfer, uint64_t bytes,
                         double wire_factor, CollectiveAlgorithm a = CollectiveAlgorithm::Ring) {
  const double chunk = double(models::chunk_size(uint64_t(transfer), t.config().chunk_bytes, t.channels(a, models::CollectiveProtocol::LL, bytes, 64)));
  return network_steps * 6 * chunk * wire_factor / t.fabric().gpu_network_bandwidth;
}

// An LL call's busiest GPU payload at its channels' rate (LL is SM-bound, not link-bound).
double channel_term(const models::Tuner& t, CollectiveAlgorithm a, uint64_t bytes, const models::CommunicatorShape& s) {
  const models::CollectiveLoad l = t.load(CollectiveOp::AllReduce, a, bytes, s);
  const int channels = t.channels(a, CollectiveProtocol::LL, bytes, s.ranks);
  return std::max(l.nvlink, l.gpu_network) / (channels * t.channel_rate(CollectiveProtocol::LL));
}

TEST(TunerAcrossNodes, NetworkStepsPayNcclsNetworkLatency) {
  // Hierarchical/LL on 8 nodes of 8: a ring in the node both ways (2 x 7 steps) and NCCL's
  // NVLS-tree across the nodes, a double binary tree up and down (2 x 3 levels): 6.6 us launch
  // + 14 x 0.6 us (NVLink) + 6 x 2.7 us (network), and the network steps' store and forward of
  // a chunk (each tree's half of a GPU's shard, S/16; LL's 2 wire bytes per byte). A 1 KiB
  // call moves next to nothing but its one channel's share of the H100's LL rate (141 GB/s
  // over 16 channels).
  const models::Tuner t = tuner_for("dgx-h100", false);
  const models::CommunicatorShape s = world(8);
  EXPECT_EQ(t.fabric().network_hops, 6);
  EXPECT_TRUE(models::Tuner::tree_across_nodes(CollectiveOp::AllReduce, s));
  EXPECT_EQ(models::Tuner::steps(CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, s), 20);
  EXPECT_EQ(models::Tuner::network_steps(CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, s), 6);
  EXPECT_NEAR(t.predict(CollectiveOp::AllReduce, 1 * KiB, s, CollectiveAlgorithm::Hierarchical, CollectiveProtocol::LL),
              (6.6 + 14 * 0.6 + 6 * 2.7) * 1e-6 + store_and_forward(t, 6, KiB / 16.0, KiB, 2) +
                  channel_term(t, CollectiveAlgorithm::Hierarchical, KiB, s), 0.1e-6);
  // Reduce-scatter and all-gather keep their rings across nodes (NCCL's NVLS-tree is for
  // all-reduce): 7 + 7 steps, 7 across.
  EXPECT_FALSE(models::Tuner::tree_across_nodes(CollectiveOp::ReduceScatter, s));
  EXPECT_EQ(models::Tuner::steps(CollectiveOp::ReduceScatter, CollectiveAlgorithm::Hierarchical, s), 14);
  EXPECT_EQ(models::Tuner::network_steps(CollectiveOp::AllGather, CollectiveAlgorithm::Hierarchical, s), 7);
  // The double binary tree crosses the network 2 log2(8) times: 6.8 + 14 x 0.6 + 6 x 5.0 us,
  // each of the 6 with a chunk of half the data.
  EXPECT_EQ(models::Tuner::network_steps(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, s), 6);
  EXPECT_NEAR(t.predict(CollectiveOp::AllReduce, 1 * KiB, s, CollectiveAlgorithm::Tree, CollectiveProtocol::LL),
              (6.8 + 14 * 0.6 + 6 * 5.0) * 1e-6 + store_and_forward(t, 6, KiB / 2.0, KiB, 2) +
                  channel_term(t, CollectiveAlgorithm::Tree, KiB, s), 0.1e-6);
}

TEST(TunerAcrossNodes, LargeCallsAreBoundByTheNics) {
  // 1 GiB on 8 DGX A100, simple protocol. Every channel's ring crosses each node boundary
  // through another GPU (NCCL's rings): 2(n-1)/n S per node's 8 NICs, an eighth of it per GPU.
  // Hierarchical runs a double binary tree across the nodes on each GPU's shard (S/8): the
  // busiest GPU sends each tree's half up to four times (parent and two children in one tree,
  // parent in the other), 2 S/8 per GPU, 2 S per node; NVLink carries the 2(g-1)/g S of the
  // rings in the node. collnet sends S/8 per GPU, S per node.
  const models::Tuner t = tuner_for("dgx-a100", true);
  const models::FabricFacts& f = t.fabric();
  const models::CommunicatorShape s = world(8);
  const double S = double(GiB), n = 64, g = 8;
  // The prediction less its latency terms (launch, steps, the network steps' chunk and the
  // ring's fill).
  auto bandwidth_term = [&](CollectiveAlgorithm a, double transfer) {
    const int net = models::Tuner::network_steps(CollectiveOp::AllReduce, a, s);
    auto fill = [&](uint64_t bytes) {
      return t.ring_fill(CollectiveOp::AllReduce, a, CollectiveProtocol::Simple, bytes, s);
    };
    return t.predict(CollectiveOp::AllReduce, GiB, s, a, CollectiveProtocol::Simple) -
           t.predict(CollectiveOp::AllReduce, 1, s, a, CollectiveProtocol::Simple) -
           store_and_forward(t, net, transfer, GiB, 1) - (fill(GiB) - fill(1));
  };
  const double ring = std::max({2 * (n - 1) / n * S / f.gpu_bandwidth, 2 * (n - 1) / n * S / g / f.gpu_network_bandwidth,
                                2 * (n - 1) / n * S / f.node_network_bandwidth});
  EXPECT_NEAR(ring, 2 * (n - 1) / n * S / f.node_network_bandwidth, 1e-12) << "the NICs bound the ring";
  EXPECT_NEAR(bandwidth_term(CollectiveAlgorithm::Ring, S / n), ring, 0.01 * ring);
  const double hierarchical = std::max({2 * (g - 1) / g * S / f.gpu_bandwidth, 2 * S / g / f.gpu_network_bandwidth,
                                        2 * S / f.node_network_bandwidth});
  EXPECT_NEAR(bandwidth_term(CollectiveAlgorithm::Hierarchical, S / g / 2), hierarchical, 0.01 * hierarchical);
  const double collnet = std::max({2 * (g - 1) / g * S / f.gpu_bandwidth, S / g / f.gpu_network_bandwidth,
                                   S / f.node_network_bandwidth});
  EXPECT_NEAR(bandwidth_term(CollectiveAlgorithm::CollNet, S / g), collnet, 0.01 * collnet);
}

TEST(TunerAcrossNodes, WithoutNvlsTheTunerRunsNcclsTreesAndRings) {
  // DGX A100 has no NVLS, so no NVLS-tree: like NCCL, the tuner runs the tree for small calls
  // (2 log2 N network steps) and the rings for large ones (every channel's ring through
  // another NIC: the node's NICs bound it), at every node count. The hierarchical schedule
  // is NCCL's only where the communicator names its dimensions.
  const models::Tuner t = tuner_for("dgx-a100", false);
  for (int nodes : {2, 8, 32, 128}) {
    EXPECT_EQ(choice(t, 16 * KiB, nodes), CollectiveAlgorithm::Tree) << nodes;
    EXPECT_EQ(choice(t, 4 * GiB, nodes), CollectiveAlgorithm::Ring) << nodes;
    for (uint64_t bytes : {KiB, MiB, GiB}) EXPECT_NE(choice(t, bytes, nodes), CollectiveAlgorithm::Hierarchical);
  }
  // The crossover moves to larger sizes with more nodes: at 2 nodes the rings win at 1 MiB, at
  // 128 the tree still does.
  EXPECT_EQ(choice(t, 1 * MiB, 2), CollectiveAlgorithm::Ring);
  EXPECT_EQ(choice(t, 1 * MiB, 128), CollectiveAlgorithm::Tree);
  // Named dimensions: the hierarchical schedule is a candidate, and it wins from 1 MiB to
  // 1 GiB (2 log2 N network steps of its tree across nodes against the rings' 2 nodes). At
  // 4 GiB the rings' bandwidth takes over, barely: per node 2(n-1)/n S into the network
  // against the tree's 2 S.
  std::vector<int> ranks(64);
  std::iota(ranks.begin(), ranks.end(), 0);
  const models::CommunicatorShape named = models::communicator_shape(ranks, 8, {8, 8}, 8);
  for (uint64_t bytes : {MiB, GiB})
    EXPECT_EQ(t.choose(CollectiveOp::AllReduce, bytes, named).algorithm, CollectiveAlgorithm::Hierarchical) << bytes;
  const double ring = t.predict(CollectiveOp::AllReduce, 4 * GiB, named, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple);
  EXPECT_NEAR(t.predict(CollectiveOp::AllReduce, 4 * GiB, named, CollectiveAlgorithm::Hierarchical, CollectiveProtocol::Simple),
              ring, 0.01 * ring);
}

TEST(TunerAcrossNodes, WithNvlsLargeAllReducesRunNvlsTree) {
  // DGX H100: NCCL reduces in the node (NVLS), across nodes on each GPU's shard, and back
  // (NVLS-tree), so large all-reduces across nodes take it; a GPU's NVLinks carry its data
  // once each way, not a ring's 2 (g-1)/g twice.
  const models::Tuner t = tuner_for("dgx-h100", false);
  for (int nodes : {2, 8, 32}) EXPECT_EQ(choice(t, 4 * GiB, nodes), CollectiveAlgorithm::NvlsTree) << nodes;
  // All-reduce only, on nodes that reduce in their switches, with two or more members in each.
  const std::string nvls = t.unsupported(CollectiveOp::AllReduce, CollectiveAlgorithm::NvlsTree,
                                         models::CollectiveProtocol::Automatic, world(2));
  EXPECT_EQ(nvls, "");
  EXPECT_NE(t.unsupported(CollectiveOp::ReduceScatter, CollectiveAlgorithm::NvlsTree,
                          models::CollectiveProtocol::Automatic, world(2)), "");
  EXPECT_NE(t.unsupported(CollectiveOp::AllReduce, CollectiveAlgorithm::NvlsTree,
                          models::CollectiveProtocol::Automatic, world(1)), "");
  EXPECT_NE(t.unsupported(CollectiveOp::AllReduce, CollectiveAlgorithm::NvlsTree,
                          models::CollectiveProtocol::LL128, world(2)), "");
  const models::Tuner a100 = tuner_for("dgx-a100", false);
  EXPECT_NE(a100.unsupported(CollectiveOp::AllReduce, CollectiveAlgorithm::NvlsTree,
                             models::CollectiveProtocol::Automatic, world(2)), "");
  for (int nodes : {2, 8}) EXPECT_NE(choice(a100, 4 * GiB, nodes), CollectiveAlgorithm::NvlsTree) << nodes;
}

TEST(TunerAcrossNodes, NvlsTreeChunksFollowNccl) {
  // enqueue.cc: NCCL's NVLS chunk (128 KiB), at most 64 KiB from 4 nodes on, then 64 KiB below
  // 4 loops of 16 channels x 8 heads, 32 KiB below 1 loop.
  const models::Tuner t = tuner_for("dgx-h100", false);
  const uint64_t loop = 16 * 8;
  EXPECT_EQ(t.nvls_tree_chunk(4 * GiB, 8, 2), 128 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(4 * loop * 128 * KiB, 8, 2), 128 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(4 * loop * 128 * KiB - 1, 8, 2), 64 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(loop * 64 * KiB - 1, 8, 2), 32 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(4 * GiB, 8, 4), 64 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(4 * loop * 64 * KiB - 1, 8, 4), 64 * KiB);
  EXPECT_EQ(t.nvls_tree_chunk(loop * 64 * KiB - 1, 8, 4), 32 * KiB);
  // Smaller chunks cost the switch more handshakes per byte.
  EXPECT_GT(t.nvls_wire_factor(32 * KiB), t.nvls_wire_factor(128 * KiB));
}

TEST(TunerAcrossNodes, SharpTakesOverWhereTheNetworkSwitchesReduce) {
  const models::Tuner plain = tuner_for("dgx-a100", false), sharp = tuner_for("dgx-a100", true);
  for (int nodes : {2, 8, 128}) {
    EXPECT_EQ(choice(sharp, 256 * MiB, nodes), CollectiveAlgorithm::CollNet) << nodes;
    EXPECT_NE(choice(plain, 256 * MiB, nodes), CollectiveAlgorithm::CollNet) << nodes;
    // Its predicted time does not grow with the node count (one round trip through the tree).
    EXPECT_NEAR(sharp.choose(CollectiveOp::AllReduce, 256 * MiB, world(nodes)).predicted_s,
                sharp.choose(CollectiveOp::AllReduce, 256 * MiB, world(2)).predicted_s, 1e-9);
  }
  // Small calls: the tree's few network steps beat SHARP's 31 us round trip on two nodes; on
  // 128 nodes SHARP's one round trip beats 2 log2 128 network steps.
  EXPECT_NE(choice(sharp, 1 * KiB, 2), CollectiveAlgorithm::CollNet);
  EXPECT_EQ(choice(sharp, 1 * KiB, 128), CollectiveAlgorithm::CollNet);
}

TEST(TunerAcrossNodes, OneNodeIgnoresTheNetwork) {
  // The validated single-node choices do not depend on the network's facts.
  const platforms::PlatformConfig c = platforms::load_platform("dgx-h100");
  models::FabricFacts bare = platforms::fabric_facts(c);
  const models::Tuner t(models::TunerConfig{}, bare);
  bare.gpu_network_bandwidth = bare.node_network_bandwidth = 0;
  const models::Tuner without(models::TunerConfig{}, bare);
  for (uint64_t bytes = 8; bytes <= 16 * GiB; bytes *= 4) {
    const models::Choice a = t.choose(CollectiveOp::AllReduce, bytes, world(1));
    const models::Choice b = without.choose(CollectiveOp::AllReduce, bytes, world(1));
    EXPECT_EQ(a.algorithm, b.algorithm) << bytes;
    EXPECT_EQ(a.protocol, b.protocol) << bytes;
    EXPECT_DOUBLE_EQ(a.predicted_s, b.predicted_s) << bytes;
  }
}

TEST(TunerOnOneNode, AmpereRingsTakeChunkTimesMoreThanTheirPipeline) {
  // GpuSpec::ring_fill_chunks (k): k NCCL chunks (S / (channels x ranks), at most 2 MiB) per
  // ring pass on one channel's share of the NVLinks; an all-reduce has two passes.
  const models::Tuner a100 = tuner_for("dgx-a100", false);
  const models::CommunicatorShape node = world(1);
  const double B = a100.fabric().gpu_bandwidth, k = a100.fabric().ring_fill_chunks;
  ASSERT_GT(k, 0.0);
  auto fill = [&](CollectiveOp op, CollectiveProtocol p, uint64_t bytes) {
    return a100.ring_fill(op, CollectiveAlgorithm::Ring, p, bytes, node);
  };
  const int C = a100.channels(CollectiveAlgorithm::Ring, CollectiveProtocol::Simple, 64 * MiB, 8);
  EXPECT_EQ(C, 16);
  EXPECT_NEAR(fill(CollectiveOp::AllReduce, CollectiveProtocol::Simple, 64 * MiB), 2 * k * (64.0 * MiB / (8 * C)) / (B / C), 1e-9);
  EXPECT_NEAR(fill(CollectiveOp::AllGather, CollectiveProtocol::Simple, 64 * MiB), k * (64.0 * MiB / (8 * C)) / (B / C), 1e-9);
  // The chunk stops growing at 2 MiB (from 256 MiB on 16 channels and 8 ranks).
  EXPECT_NEAR(fill(CollectiveOp::AllReduce, CollectiveProtocol::Simple, 4 * GiB), 2 * k * (2.0 * MiB) / (B / C), 1e-9);
  EXPECT_EQ(fill(CollectiveOp::AllReduce, CollectiveProtocol::LL128, 64 * MiB), 0.0);
  EXPECT_EQ(a100.ring_fill(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, CollectiveProtocol::Simple, 64 * MiB, node), 0.0);
  // Hopper's rings write to their peers: no such term.
  const models::Tuner h100 = tuner_for("dgx-h100", false);
  EXPECT_EQ(h100.ring_fill(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple, 64 * MiB, node), 0.0);
}

TEST(TunerOnOneNode, ChoosesByNcclsOwnModel) {
  // choose() compares NCCL's own estimates (estimate(.., false)): all channels whatever the size,
  // NCCL's penalty for trees, no LL128 rate or ring fill measured beyond NCCL's model. On one
  // A100 node NCCL's rings beat its chain-shaped trees at every size (tuning.cc: a tree's LL at
  // 0.92/3.8 of the links against a ring's 1/4, its LL128 at 0.92 x 7/9 against 0.92), and
  // LL128 beats Simple up to 32 MiB (launch and 14 steps of 14 + 1.9 us against 8.4 + 3.4 us).
  const models::Tuner a100 = tuner_for("dgx-a100", false);
  const models::CommunicatorShape node = world(1);
  for (uint64_t bytes = 8 * KiB; bytes <= 4 * GiB; bytes *= 2)
    EXPECT_EQ(a100.choose(CollectiveOp::AllReduce, bytes, node).algorithm, CollectiveAlgorithm::Ring) << bytes;
  EXPECT_EQ(a100.choose(CollectiveOp::AllReduce, 64 * KiB, node).protocol, CollectiveProtocol::LL);
  EXPECT_EQ(a100.choose(CollectiveOp::AllReduce, 16 * MiB, node).protocol, CollectiveProtocol::LL128);
  EXPECT_EQ(a100.choose(CollectiveOp::AllReduce, 32 * MiB, node).protocol, CollectiveProtocol::LL128);
  EXPECT_EQ(a100.choose(CollectiveOp::AllReduce, 64 * MiB, node).protocol, CollectiveProtocol::Simple);
  // The run's own estimate keeps what was measured: LL128's rate makes 16 MiB slower than
  // NCCL's model says.
  const auto r = CollectiveAlgorithm::Ring;
  const auto ll128 = CollectiveProtocol::LL128;
  EXPECT_GT(a100.estimate(CollectiveOp::AllReduce, 16 * MiB, node, r, ll128, true),
            a100.estimate(CollectiveOp::AllReduce, 16 * MiB, node, r, ll128, false));
  // NCCL's tree penalties, ring's bandwidth over tree's.
  const models::CommunicatorShape two = world(2);
  EXPECT_NEAR(models::Tuner::nccl_tree_penalty(CollectiveProtocol::Simple, node), 1 / 0.92, 1e-12);
  EXPECT_NEAR(models::Tuner::nccl_tree_penalty(CollectiveProtocol::LL, node), 3.8 / (4 * 0.92), 1e-12);
  EXPECT_NEAR(models::Tuner::nccl_tree_penalty(ll128, node), 9.0 / 7.0, 1e-12);
  EXPECT_NEAR(models::Tuner::nccl_tree_penalty(ll128, two), 128.0 / 120.0, 1e-12);
}

TEST(TunerOnOneNode, HopperSimpleSlicesPayTheirHandshake) {
  // GpuSpec::simple_handshake_us: each slice (half a ring chunk of S / (ranks x channels), at
  // most 1 MiB; a direct exchange's chunk of at most 512 KiB) costs its channel h at its share
  // of the GPU's NVLinks: a wire factor (s + h B / C) / s.
  const models::Tuner h100 = tuner_for("dgx-h100", false);
  const models::CommunicatorShape node = world(1);
  const double B = h100.fabric().gpu_bandwidth, h = h100.fabric().simple_handshake_s;
  ASSERT_GT(h, 0.0);
  const int C = 16;
  const CollectiveOp gather = CollectiveOp::AllGather;
  auto factor = [&](CollectiveOp op, CollectiveAlgorithm a, uint64_t bytes) {
    return h100.handshake_factor(op, a, CollectiveProtocol::Simple, bytes, node);
  };
  EXPECT_EQ(h100.simple_slice(gather, CollectiveAlgorithm::Ring, 32 * MiB, node), 128 * KiB);
  EXPECT_NEAR(factor(gather, CollectiveAlgorithm::Ring, 32 * MiB), (128.0 * KiB + h * B / C) / (128.0 * KiB), 1e-12);
  EXPECT_EQ(h100.simple_slice(gather, CollectiveAlgorithm::Ring, 16 * GiB, node), 1 * MiB);
  EXPECT_EQ(h100.simple_slice(CollectiveOp::AllToAll, CollectiveAlgorithm::Direct, 16 * GiB, node), 512 * KiB);
  EXPECT_NEAR(factor(gather, CollectiveAlgorithm::Ring, 16 * GiB), (1.0 * MiB + h * B / C) / (1.0 * MiB), 1e-12);
  // A chain's broadcast or reduce is not cut by members: 32 MiB over 16 channels is a full
  // 2 MiB chunk per channel, two 1 MiB slices, eight times an all-gather's.
  for (const CollectiveOp chain : {CollectiveOp::Broadcast, CollectiveOp::Reduce}) {
    EXPECT_EQ(h100.simple_slice(chain, CollectiveAlgorithm::Ring, 32 * MiB, node), 1 * MiB);
    EXPECT_NEAR(factor(chain, CollectiveAlgorithm::Ring, 32 * MiB), (1.0 * MiB + h * B / C) / (1.0 * MiB), 1e-12);
  }
  // Other protocols and algorithms are charged otherwise; A100's file leaves it out.
  EXPECT_EQ(h100.handshake_factor(gather, CollectiveAlgorithm::Ring, CollectiveProtocol::LL128, 32 * MiB, node), 1.0);
  EXPECT_EQ(factor(CollectiveOp::AllReduce, CollectiveAlgorithm::Nvls, 32 * MiB), 1.0);
  EXPECT_EQ(tuner_for("dgx-a100", false).handshake_factor(gather, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple,
                                                          32 * MiB, node), 1.0);
  // NCCL's tuner does not know it: the choice is made without it, its prediction holds it.
  const models::Choice c = h100.choose(CollectiveOp::AllGather, 32 * MiB, node);
  ASSERT_EQ(c.algorithm, CollectiveAlgorithm::Ring);
  ASSERT_EQ(c.protocol, CollectiveProtocol::Simple);
  const double without = h100.estimate(CollectiveOp::AllGather, 32 * MiB, node, c.algorithm, c.protocol, false);
  EXPECT_GT(c.predicted_s, without);
  EXPECT_DOUBLE_EQ(c.predicted_s, h100.predict(CollectiveOp::AllGather, 32 * MiB, node, c.algorithm, c.protocol));
}

TEST(TunerPointToPoint, ChannelsPerPeerFollowNcclsPlan) {
  // enqueue.cc addP2pToPlan on a DGX H100 (32 p2p channels, 32 per peer, 512 KiB NVLink chunk):
  // start on the most channels that keep every peer on its own (32 / ranks), then double while
  // a channel would carry more than 32 chunks (16 MiB).
  const models::Tuner t = tuner_for("dgx-h100", false);
  auto in_node = [&](uint64_t bytes, int ranks) { return t.p2p_plan(bytes, ranks, false).channels; };
  EXPECT_EQ(in_node(32 * MiB, 4), 8);
  EXPECT_EQ(in_node(128 * MiB, 4), 8);    // 16 MiB per channel: not more than 32 chunks
  EXPECT_EQ(in_node(256 * MiB, 4), 16);   // the measured sendrecv's jump (163 -> 299 GB/s)
  EXPECT_EQ(in_node(512 * MiB, 4), 32);
  EXPECT_EQ(in_node(64 * GiB, 4), 32);    // at most 32 per peer
  EXPECT_EQ(in_node(32 * MiB, 8), 4);
  EXPECT_EQ(in_node(128 * MiB, 8), 8);
  EXPECT_EQ(in_node(32 * MiB, 2), 16);
  EXPECT_EQ(in_node(100 * KiB, 8), 2);    // at least 64 KiB (a chunk / 8) per channel
  EXPECT_EQ(in_node(1, 8), 1);
  // A peer in the node: each channel at the GPU's point-to-point rate (H100: 20.9 GB/s), and
  // the receiver copies its last chunk (at most 512 KiB) out at that rate.
  const models::P2pPlan p = t.p2p_plan(32 * MiB, 4, false);
  EXPECT_EQ(p.chunk, 512 * KiB);
  EXPECT_NEAR(p.rate, 8 * 20.9e9, 1e3);
  EXPECT_NEAR(p.drain_s, 512.0 * KiB / 20.9e9, 1e-12);
  EXPECT_NEAR(t.p2p_plan(128 * KiB, 8, false).drain_s, 64.0 * KiB / 20.9e9, 1e-12);  // two 64 KiB parts
  // Across nodes: 2 channels per peer (1 past 64 ranks) in 128 KiB chunks, the NIC's and the
  // network's rate, no copy at the end charged.
  const models::P2pPlan net = t.p2p_plan(256 * MiB, 16, true);
  EXPECT_EQ(net.channels, 2);
  EXPECT_EQ(net.chunk, 128 * KiB);
  EXPECT_EQ(net.rate, 0.0);
  EXPECT_EQ(net.drain_s, 0.0);
  EXPECT_EQ(t.p2p_plan(256 * MiB, 128, true).channels, 1);
  // A GPU without a measured point-to-point rate keeps the links' rate.
  const models::Tuner a100 = tuner_for("dgx-a100", false);
  EXPECT_EQ(a100.p2p_plan(32 * MiB, 4, false).rate, 0.0);
  EXPECT_FALSE(a100.runs_p2p(CollectiveOp::AllToAll));
  EXPECT_TRUE(t.runs_p2p(CollectiveOp::AllToAll));
  EXPECT_FALSE(t.runs_p2p(CollectiveOp::AllGather));
}

TEST(TunerOnOneNode, ProtocolLatenciesScaleWithTheSmClock) {
  // NCCL's latencies are Hopper's (1,980 MHz); A100 runs at 1,410 MHz.
  const models::Tuner a100 = tuner_for("dgx-a100", false), h100 = tuner_for("dgx-h100", false);
  for (CollectiveProtocol p : {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
    const models::ProtocolCost nccl = a100.nccl_cost(CollectiveAlgorithm::Ring, p);
    const models::ProtocolCost c = a100.cost(CollectiveAlgorithm::Ring, p);
    EXPECT_NEAR(c.launch_us, nccl.launch_us * 1980.0 / 1410.0, 1e-12);
    EXPECT_NEAR(c.step_us, nccl.step_us * 1980.0 / 1410.0, 1e-12);
    EXPECT_EQ(c.network_step_us, nccl.network_step_us);
    EXPECT_EQ(h100.cost(CollectiveAlgorithm::Ring, p).launch_us, nccl.launch_us);
  }
}

TEST(TunerOnOneNode, Ll128RunsAtTheMeasuredRateWhereOneIsGiven) {
  // A100: 178 GB/s of bus bandwidth over its 16 channels; H100: LL128's 120 data bytes per 128
  // of its links (its channels still wait for their steps' flags).
  const models::Tuner a100 = tuner_for("dgx-a100", false), h100 = tuner_for("dgx-h100", false);
  EXPECT_NEAR(a100.channel_rate(CollectiveProtocol::LL128) * 16, 178e9, 1e-3);
  EXPECT_NEAR(h100.channel_rate(CollectiveProtocol::LL128) * 16, h100.fabric().gpu_bandwidth * 120 / 128, 1e-3);
  const double t = a100.predict(CollectiveOp::AllReduce, 256 * MiB, world(1), CollectiveAlgorithm::Ring,
                                CollectiveProtocol::LL128);
  EXPECT_GE(t, 2.0 * 7 / 8 * 256 * MiB / 178e9);
}

}  // namespace
}  // namespace tessera
