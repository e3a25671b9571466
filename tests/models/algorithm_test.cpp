// Every collective algorithm on an ideal fabric (no packet overhead, no protocol latency)
// against its closed form, bytes per rank against the schedule, the tuner's cost model, link
// sharing between concurrent collectives and the SM share collectives take from compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/collectives/schedule.h"
#include "models/collectives/tuner.h"
#include "tests/support/child_process.h"
#include "tests/support/jobs.h"

namespace tessera {
namespace {

using models::CollectiveAlgorithm;
using testing::ideal_collectives;
using testing::ideal_node;
using testing::one_collective;
using testing::run_in_child;
using workloads::CollectiveKind;

constexpr double kLinkGBps = 450.0;
constexpr double B = kLinkGBps * 1e9;
constexpr uint64_t kChunk = 128 * 1024;

nlohmann::json run(const platforms::PlatformConfig& p, const workloads::Job& job,
                   const models::CollectiveEngineConfig& c, bool trace = false) {
  return run_in_child([&] {
    app::SimulationOptions o;
    o.collectives = c;
    o.trace = trace;
    return testing::summarize(app::simulate(p, job, o));
  });
}

// Latency left over on an ideal fabric: a few chunk store-and-forwards and path latencies per
// dependent step of the schedule.
double slack(const platforms::PlatformConfig& p, int steps) {
  return steps * ((2 * p.node.nvlink.link.latency_ns + p.node.nvlink.switch_latency_ns) * 1e-9 + 2.0 * kChunk / B);
}

struct AlgorithmCase {
  CollectiveAlgorithm algorithm;
  CollectiveKind kind;
  int gpus_per_node;
  double wire_per_byte;  // bytes the busiest GPU port sends per byte of S (closed form)
  int steps;             // dependent steps (latency terms)
  double tolerance = 0.02;
};

class ClosedForm : public ::testing::TestWithParam<AlgorithmCase> {};

TEST_P(ClosedForm, TimeIsWireBytesOverBandwidthPlusLatencyTerms) {
  const AlgorithmCase c = GetParam();
  const int n = 8;
  const uint64_t bytes = 256ull << 20;
  const auto p = ideal_node(n, kLinkGBps);
  auto engine = ideal_collectives(c.algorithm, c.gpus_per_node);
  engine.tuner.nvls_efficiency = 1.0;  // the ideal switch reduces at line rate
  engine.tuner.nvls_handshake_us = 0;  // and its channels never wait
  const nlohmann::json r = run(p, one_collective(n, c.kind, bytes), engine);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_FALSE(r["deadlocked"].get<bool>()) << r["deadlock"];
  const double bandwidth_term = c.wire_per_byte * double(bytes) / B;
  const double simulated = r["iteration_time_s"];
  EXPECT_GE(simulated, bandwidth_term * 0.999);
  EXPECT_LE(simulated, bandwidth_term * (1 + c.tolerance) + slack(p, c.steps))
      << models::algorithm_name(c.algorithm) << " " << workloads::to_string(c.kind);
  // Bytes injected equal bytes delivered (the switch adds contributions up and copies
  // multicasts, so NVLS is checked per rank in DataConservation instead).
  uint64_t sent = 0, received = 0;
  for (int rank = 0; rank < n; ++rank)
    sent += r["sent"][rank].get<uint64_t>(), received += r["received"][rank].get<uint64_t>();
  if (c.algorithm != CollectiveAlgorithm::Nvls) {
    EXPECT_EQ(sent, received);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ClosedForm,
    ::testing::Values(
        // ring all-reduce 2(n-1)/n S/B; reduce-scatter and all-gather (n-1)/n S/B
        AlgorithmCase{CollectiveAlgorithm::Ring, CollectiveKind::AllReduce, 0, 1.75, 14},
        AlgorithmCase{CollectiveAlgorithm::Ring, CollectiveKind::ReduceScatter, 0, 0.875, 7},
        // direct one-shot: the same bytes, 2 steps
        AlgorithmCase{CollectiveAlgorithm::Direct, CollectiveKind::AllReduce, 0, 1.75, 2},
        AlgorithmCase{CollectiveAlgorithm::Direct, CollectiveKind::AllGather, 0, 0.875, 1},
        // halving-doubling: S/2 + S/4 + ... both ways = 2(n-1)/n S, 2 log2 n steps
        AlgorithmCase{CollectiveAlgorithm::HalvingDoubling, CollectiveKind::AllReduce, 0, 1.75, 6},
        AlgorithmCase{CollectiveAlgorithm::HalvingDoubling, CollectiveKind::AllGather, 0, 0.875, 3},
        // double binary tree (one rank per node): half the data per tree; a rank is inner in
        // one tree (S/2 up, 2 x S/2 down) and a leaf in the other (S/2): 2S. The four phases
        // share each port round-robin and the inner ranks' demand is uneven over time: the
        // pipelined schedule stays within 15% of the bound (14% measured).
        AlgorithmCase{CollectiveAlgorithm::Tree, CollectiveKind::AllReduce, 1, 2.0, 6, 0.15},
        // one node: NCCL's chain inside the node, S/2 up and down in each tree: 2S
        AlgorithmCase{CollectiveAlgorithm::Tree, CollectiveKind::AllReduce, 0, 2.0, 14},
        // hierarchical 4 x 2: RS in node 3/4 S, across nodes 1/2 S/4, then back: 1.75 S
        AlgorithmCase{CollectiveAlgorithm::Hierarchical, CollectiveKind::AllReduce, 4, 1.75, 8},
        // NVLS: S up + S/n back (reduce), S/n up + S down (multicast): (1 + 1/n) S each way
        AlgorithmCase{CollectiveAlgorithm::Nvls, CollectiveKind::AllReduce, 0, 1.125, 2},
        AlgorithmCase{CollectiveAlgorithm::Nvls, CollectiveKind::ReduceScatter, 0, 1.0, 1}));

TEST(DataConservation, EveryRankGetsTheBytesItsScheduleOwesIt) {
  const int n = 8;
  const uint64_t S = 64ull << 20;
  const auto p = ideal_node(n, kLinkGBps);
  struct Expect {
    CollectiveAlgorithm algorithm;
    CollectiveKind kind;
    int gpus_per_node;
    uint64_t per_rank_sent, per_rank_received;  // 0: checked by total only
    uint64_t total_received;
  };
  const uint64_t shard = S / n;
  const std::vector<Expect> cases = {
      {CollectiveAlgorithm::Ring, CollectiveKind::AllReduce, 0, 14 * shard, 14 * shard, 0},
      {CollectiveAlgorithm::Direct, CollectiveKind::AllReduce, 0, 14 * shard, 14 * shard, 0},
      {CollectiveAlgorithm::HalvingDoubling, CollectiveKind::AllReduce, 0, 14 * shard, 14 * shard, 0},
      {CollectiveAlgorithm::Hierarchical, CollectiveKind::AllReduce, 4, 14 * shard, 14 * shard, 0},
      {CollectiveAlgorithm::Nvls, CollectiveKind::AllReduce, 0, S + shard, S + shard, 0},
      {CollectiveAlgorithm::Nvls, CollectiveKind::AllGather, 0, shard, S, 0},
      // every tree edge carries its half up and down: 2 trees x (n-1) edges x 2 x S/2
      {CollectiveAlgorithm::Tree, CollectiveKind::AllReduce, 1, 0, 0, 2ull * (n - 1) * S},
      {CollectiveAlgorithm::Tree, CollectiveKind::Broadcast, 2, 0, 0, uint64_t(n - 1) * S},
      {CollectiveAlgorithm::Direct, CollectiveKind::Reduce, 0, 0, 0, uint64_t(n - 1) * S},
  };
  for (const Expect& e : cases) {
    const nlohmann::json r = run(p, one_collective(n, e.kind, S), ideal_collectives(e.algorithm, e.gpus_per_node));
    ASSERT_FALSE(r.contains("error")) << r.dump();
    ASSERT_FALSE(r["deadlocked"].get<bool>()) << r["deadlock"];
    const std::string what = std::string(models::algorithm_name(e.algorithm)) + " " + workloads::to_string(e.kind);
    uint64_t sent = 0, received = 0;
    for (int rank = 0; rank < n; ++rank) {
      sent += r["sent"][rank].get<uint64_t>();
      received += r["received"][rank].get<uint64_t>();
      if (e.per_rank_sent) {
        EXPECT_EQ(r["sent"][rank].get<uint64_t>(), e.per_rank_sent) << what << " rank " << rank;
      }
      if (e.per_rank_received) {
        EXPECT_EQ(r["received"][rank].get<uint64_t>(), e.per_rank_received) << what << " rank " << rank;
      }
    }
    if (e.algorithm != CollectiveAlgorithm::Nvls) {
      EXPECT_EQ(sent, received) << what;
    }
    if (e.total_received) {
      EXPECT_EQ(received, e.total_received) << what;
    }
  }
}

TEST(DataConservation, AllToAllVDeliversEachPeerItsOwnSize) {
  const int n = 4;
  workloads::Job job;
  workloads::Communicator all{"ep", {0, 1, 2, 3}};
  job.communicators.push_back(all);
  std::vector<uint64_t> splits(n * n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) splits[s * n + d] = s == d ? 0 : uint64_t(1 + s + 3 * d) << 20;
  job.splits.push_back(splits);
  for (int r = 0; r < n; ++r) {
    testing::ProgramBuilder b(job, r);
    b.collective("dispatch", "ep", CollectiveKind::AllToAllV, 0, 1);
    b.finish();
  }
  for (auto& rank : job.ranks) {
    auto program = std::make_shared<workloads::Program>(*rank.program);
    program->ops[0].splits = 1;
    rank.program = program;
  }
  const nlohmann::json r = run(ideal_node(n, kLinkGBps), job, ideal_collectives(CollectiveAlgorithm::Automatic));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  double longest_port = 0;
  for (int rank = 0; rank < n; ++rank) {
    uint64_t out = 0, in = 0;
    for (int k = 0; k < n; ++k) out += splits[rank * n + k], in += splits[k * n + rank];
    EXPECT_EQ(r["sent"][rank].get<uint64_t>(), out);
    EXPECT_EQ(r["received"][rank].get<uint64_t>(), in);
    longest_port = std::max({longest_port, double(out), double(in)});
  }
  // The busiest port sets the time.
  EXPECT_NEAR(r["iteration_time_s"].get<double>(), longest_port / B, 0.03 * longest_port / B);
}

TEST(LinkSharing, TwoRingsThroughTheSameGpusEachGetHalf) {
  // Ring all-reduces on {0,1,2,3} and {2,3,4,5} at the same time: GPUs 2 and 3 carry both
  // rings on their links, so each ring runs at B/2: 2 x 2(n-1)/n S/B.
  const uint64_t S = 128ull << 20;
  workloads::Job job;
  job.communicators.push_back({"a", {0, 1, 2, 3}});
  job.communicators.push_back({"b", {2, 3, 4, 5}});
  for (int r = 0; r < 6; ++r) {
    testing::ProgramBuilder b(job, r);
    if (r <= 3) b.collective("ar_a", "a", CollectiveKind::AllReduce, 0, S);
    if (r >= 2) b.collective("ar_b", "b", CollectiveKind::AllReduce, 1, S);
    b.finish();
  }
  const auto p = ideal_node(6, kLinkGBps);
  const nlohmann::json r = run(p, job, ideal_collectives(CollectiveAlgorithm::Ring), true);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const double alone = 2.0 * 3 / 4 * double(S) / B;
  for (int rank : {0, 5})  // rank 0 runs only ring a, rank 5 only ring b
    EXPECT_NEAR(r["finish_s"][rank].get<double>(), 2 * alone, 0.04 * 2 * alone) << rank;
}

TEST(SmShare, ComputeSlowsByTheSmsCollectiveChannelsHold) {
  // A kernel of time T alone, running while a long all-reduce holds C channels (one SM each),
  // takes T * sm_count / (sm_count - C).
  const int n = 2;
  auto p = ideal_node(n, kLinkGBps);
  workloads::Job job;
  job.communicators.push_back({"world", {0, 1}});
  const double flops = 4e12;
  for (int r = 0; r < n; ++r) {
    testing::ProgramBuilder b(job, r);
    b.collective("allreduce", "comm", CollectiveKind::AllReduce, 0, 8ull << 30);
    b.compute("gemm", "compute", flops, 0);
    b.finish();
  }
  auto engine = ideal_collectives(CollectiveAlgorithm::Ring);
  engine.channels = 16;
  const nlohmann::json r = run(p, job, engine, true);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const double alone = flops / (p.gpu.peak_tflops[3] * 1e12 * p.gpu.compute_efficiency) +
                       p.gpu.kernel_overhead_us * 1e-6;
  const double share = double(p.gpu.sm_count - 16) / p.gpu.sm_count;
  double kernel = 0;
  for (const auto& span : r["spans"][0])
    if (span["op"].get<int>() == 1) kernel = span["end"].get<double>() - span["start"].get<double>();
  EXPECT_NEAR(kernel, alone / share, 1e-3 * alone / share);
}

TEST(Tuner, PicksLowLatencyForSmallAndBandwidthForLargeCalls) {
  models::FabricFacts fabric;
  fabric.gpu_bandwidth = 360e9;
  fabric.in_switch_reduction = true;
  const models::Tuner tuner(models::TunerConfig{}, fabric);
  models::CommunicatorShape shape;
  shape.ranks = 8;
  shape.dimensions = {8, 1};
  const auto small = tuner.choose(protocol::CollectiveOp::AllReduce, 1024, shape);
  EXPECT_EQ(small.protocol, models::CollectiveProtocol::LL);
  const auto large = tuner.choose(protocol::CollectiveOp::AllReduce, 1ull << 30, shape);
  EXPECT_EQ(large.algorithm, CollectiveAlgorithm::Nvls);
  EXPECT_EQ(large.protocol, models::CollectiveProtocol::Simple);
  // Ring/LL: 6.6 us + 14 x 0.6 us, then 2 x 1.75 S / B.
  EXPECT_NEAR(tuner.predict(protocol::CollectiveOp::AllReduce, 1 << 20, shape,
                            CollectiveAlgorithm::Ring, models::CollectiveProtocol::LL),
              15.0e-6 + 2 * 1.75 * (1 << 20) / 360e9, 1e-9);
  // Without in-switch reduction NVLS is not offered, and forcing it is an error.
  fabric.in_switch_reduction = false;
  const models::Tuner plain(models::TunerConfig{}, fabric);
  EXPECT_EQ(plain.choose(protocol::CollectiveOp::AllReduce, 1ull << 30, shape).algorithm, CollectiveAlgorithm::Ring);
  EXPECT_THROW(plain.choose(protocol::CollectiveOp::AllReduce, 1 << 20, shape, CollectiveAlgorithm::Nvls),
               std::invalid_argument);
  shape.ranks = 6;
  EXPECT_THROW(plain.choose(protocol::CollectiveOp::AllReduce, 1 << 20, shape, CollectiveAlgorithm::HalvingDoubling),
               std::invalid_argument);
}

TEST(Tuner, BinaryTreesAreComplementary) {
  // NCCL's in-order tree over 8 ranks: leaves are the odd ranks; its mirror image has the even
  // ranks as leaves, so no rank is inner in both trees.
  for (int r = 0; r < 8; ++r) {
    int parent, c0, c1, mp, m0, m1;
    models::binary_tree(8, r, parent, c0, c1);
    models::binary_tree(8, 7 - r, mp, m0, m1);
    const bool inner = c0 >= 0 || c1 >= 0, mirror_inner = m0 >= 0 || m1 >= 0;
    EXPECT_FALSE(inner && mirror_inner) << r;
  }
  EXPECT_EQ(models::binary_tree_depth(8), 3);
}

TEST(TreeSchedule, TheTreesDepthIsItsDeepestMembers) {
  // Hops from each member up to the root, the longest of them, over every count (asked twice,
  // and in turn, as the ranks of calls ask).
  for (int n : {1, 2, 3, 5, 8, 13, 64, 100, 255, 256, 257, 1000, 1024, 4097}) {
    int deepest = 0;
    for (int r = 0; r < n; ++r) {
      int d = 0, p = r, c0, c1;
      for (; p > 0; ++d) models::binary_tree(n, p, p, c0, c1);
      deepest = std::max(deepest, d);
    }
    EXPECT_EQ(models::binary_tree_depth(n), deepest) << n << " members";
    EXPECT_EQ(models::binary_tree_depth(n), deepest) << n << " members, asked again";
  }
}

TEST(TreeSchedule, TheDoubleBinaryTreesAreComplementaryOverAnyCount) {
  // NCCL's ncclGetDtree: tree 1 mirrors tree 0 over an even count and shifts it by one over an
  // odd count. Either way each tree has one root and every other member one parent that lists it
  // as a child, and no member has more than 4 edges in the two trees together (a parent and two
  // children in one, a parent in the other; tree 0's root has one child): mirrored, the middle
  // of an odd count was inner in both, 6 edges, and its NIC carried one and a half times the
  // others' traffic (5 DGX H100 nodes at 254 GB/s of busbw instead of 380).
  for (int count = 2; count <= 33; ++count) {
    std::vector<size_t> edges(size_t(count), 0);
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int m = 0; m < count; ++m) {
        const models::TreeLinks links = models::double_binary_tree(count, m, t);
        if (links.parent < 0) ++roots;
        else {
          const models::TreeLinks up = models::double_binary_tree(count, links.parent, t);
          EXPECT_NE(std::find(up.children.begin(), up.children.end(), m), up.children.end())
              << count << " members, tree " << t << ", member " << m;
        }
        edges[size_t(m)] += links.children.size() + (links.parent >= 0 ? 1 : 0);
      }
      EXPECT_EQ(roots, 1) << count << " members, tree " << t;
    }
    for (int m = 0; m < count; ++m) EXPECT_LE(edges[size_t(m)], 4u) << count << " members, member " << m;
  }
}

TEST(TreeSchedule, NodeBlocksGroupTheMembersAsTheScanDoes) {
  // Where every node's members are one block (CommunicatorShape::node_blocks) the schedule reads
  // the groups off the shape instead of scanning the members: the same phases for every
  // position, against the scan (the same shape with node_blocks off). 4 nodes of 8 members, 2
  // nodes of 4, 9 nodes of one (a data-parallel group), and 8 members with no node size given.
  auto members = [](int count, int stride, int per_block, int block_stride) {
    std::vector<int> ranks;
    for (int i = 0; i < count; ++i) ranks.push_back(i / per_block * block_stride + i % per_block * stride);
    return ranks;
  };
  struct Case {
    std::vector<int> ranks;
    int gpus_per_node;
  };
  for (const Case& c : {Case{members(32, 1, 8, 8), 8}, Case{members(8, 1, 4, 8), 8}, Case{members(9, 1, 1, 8), 8},
                        Case{members(8, 1, 8, 8), 0}}) {
    const models::CommunicatorShape blocks = models::communicator_shape(c.ranks, c.gpus_per_node);
    ASSERT_TRUE(blocks.node_blocks);
    models::CommunicatorShape scan = blocks;
    scan.node_blocks = false;
    for (protocol::CollectiveOp kind : {protocol::CollectiveOp::AllReduce, protocol::CollectiveOp::Broadcast})
      for (int p = 0; p < int(c.ranks.size()); ++p) {
        models::ScheduleCall call;
        call.kind = kind;
        call.bytes = 64 << 20;
        call.ranks = &c.ranks;
        call.position = p;
        call.rank = c.ranks[size_t(p)];
        call.channels = 4;
        call.chunk_bytes = kChunk;
        std::vector<models::Phase> fast, slow;
        models::ScheduleBuilder bf(call, fast), bs(call, slow);
        models::tree_schedule(bf, c.gpus_per_node, blocks);
        models::tree_schedule(bs, c.gpus_per_node, scan);
        ASSERT_EQ(fast.size(), slow.size()) << c.ranks.size() << " members, position " << p;
        for (size_t k = 0; k < fast.size(); ++k) {
          EXPECT_EQ(fast[k].after, slow[k].after);
          for (auto lists : {std::make_pair(&fast[k].sends, &slow[k].sends),
                             std::make_pair(&fast[k].receives, &slow[k].receives)}) {
            ASSERT_EQ(lists.first->size(), lists.second->size());
            for (size_t i = 0; i < lists.first->size(); ++i) {
              EXPECT_EQ((*lists.first)[i].peer, (*lists.second)[i].peer) << "position " << p << ", phase " << k;
              EXPECT_EQ((*lists.first)[i].bytes, (*lists.second)[i].bytes);
              EXPECT_EQ((*lists.first)[i].first_channel, (*lists.second)[i].first_channel);
              EXPECT_EQ((*lists.first)[i].channels, (*lists.second)[i].channels);
            }
          }
        }
      }
  }
}

TEST(HierarchicalSchedule, AnAllReduceAcrossNodesRunsTheDoubleBinaryTreeThere) {
  // 4 nodes of 8: the ring reduce-scatter in the node (7 phases), a double binary tree across
  // the nodes on GPU i of every node (as NCCL's NVLS-tree runs there), the ring all-gather back
  // (7 phases). Rank 18 is GPU 2 of node 2: in the in-order tree over 4 nodes its parent is
  // node 0 and its children nodes 1 and 3; in the mirror it is a leaf under node 1.
  std::vector<int> ranks(32);
  for (int r = 0; r < 32; ++r) ranks[size_t(r)] = r;
  const models::CommunicatorShape shape = models::communicator_shape(ranks, 8);
  ASSERT_TRUE(models::Tuner::tree_across_nodes(protocol::CollectiveOp::AllReduce, shape));
  models::ScheduleCall call;
  call.bytes = 64 << 20;
  call.ranks = &ranks;
  call.position = call.rank = 18;
  call.channels = 4;
  call.chunk_bytes = kChunk;
  call.reduce_part = call.gather_part = true;
  std::vector<models::Phase> phases;
  models::ScheduleBuilder b(call, phases);
  models::hierarchical_schedule(b, shape);
  ASSERT_EQ(phases.size(), 7u + 4 + 7);
  auto peers = [](const std::vector<models::Transfer>& ts) {
    std::vector<int> out;
    for (const models::Transfer& t : ts) out.push_back(t.peer);
    return out;
  };
  const uint64_t half = (64ull << 20) / 8 / 2;
  // Tree 0, up: inner, gated by its children's receives and its own reduce-scatter.
  EXPECT_EQ(peers(phases[7].sends), std::vector<int>{2});
  EXPECT_EQ(peers(phases[7].receives), (std::vector<int>{10, 26}));
  EXPECT_EQ(phases[7].sends[0].bytes, half);
  EXPECT_EQ(phases[7].after, 7);
  EXPECT_EQ(phases[7].also_after, 6);
  // Tree 0, down: forwards what its parent sends.
  EXPECT_EQ(peers(phases[8].receives), std::vector<int>{2});
  EXPECT_EQ(peers(phases[8].sends), (std::vector<int>{10, 26}));
  EXPECT_EQ(phases[8].after, 8);
  // Tree 1: a leaf, up once the reduce-scatter has its half, then the sum back down.
  EXPECT_EQ(peers(phases[9].sends), std::vector<int>{10});
  EXPECT_TRUE(phases[9].receives.empty());
  EXPECT_EQ(phases[9].after, 6);
  EXPECT_EQ(peers(phases[10].receives), std::vector<int>{10});
  // The all-gather in the node waits for both trees' halves.
  EXPECT_EQ(phases[11].after, 8);
  EXPECT_EQ(phases[11].also_after, 10);
  EXPECT_EQ(peers(phases[11].sends), std::vector<int>{19});
}

// Flow fidelity cuts a transfer into at most 16 larger chunks, but a ring step still forwards
// packet fidelity's chunk: the latency chain (each step's chunk stored and forwarded on every
// link) and the channel's handshakes are a chunk's, not a 16th of the step. A 2.5 GB
// all-reduce over 9 members, one per node, 16 channels: a step's 17.5 MB would have been the
// chain's chunk, so the chain outlasted the bytes on a few hops of 25 GB/s.
TEST(RingSchedule, FlowFidelityStepsForwardPacketFidelitysChunk) {
  std::vector<int> ranks(9);
  for (int r = 0; r < 9; ++r) ranks[size_t(r)] = r * 8;
  const models::CommunicatorShape shape = models::communicator_shape(ranks, 8);
  models::ScheduleCall call;
  call.bytes = 2517145600ull;
  call.ranks = &ranks;
  call.channels = 16;
  call.chunk_bytes = kChunk;
  call.steady_state = true;
  call.reduce_part = call.gather_part = true;
  std::vector<models::Phase> phases;
  models::ScheduleBuilder b(call, phases);
  models::ring_schedule(b, shape);
  ASSERT_FALSE(phases.empty());
  const uint64_t segment = (call.bytes + 8) / 9;
  for (const models::Phase& ph : phases)
    for (const models::Transfer& t : ph.sends) {
      const uint64_t step = (segment * t.channels + 15) / 16;  // one step of this transfer's ring
      EXPECT_GE(t.chunk_bytes, t.bytes / 16);  // few flows: at most 16 chunks a transfer
      // Packet fidelity's chunk: kChunk, or a 256th of the step where that is larger.
      EXPECT_EQ(t.step_chunk_bytes, std::max<uint64_t>(kChunk, (step + 255) / 256)) << t.steps << " steps";
      EXPECT_LE(t.step_chunk_bytes * 16, step);  // not a 16th of it
    }
}

}  // namespace
}  // namespace tessera
