// Ring collectives through the NVSwitch against their closed forms, data conservation, and
// link sharing between concurrent transfers.
#include <algorithm>

#include <gtest/gtest.h>

#include "models/collectives/few_by_key.h"
#include "tests/support/child_process.h"
#include "tests/support/jobs.h"

namespace tessera {
namespace {

using testing::ideal_node;
using testing::one_collective;
using testing::run_in_child;
using workloads::CollectiveKind;

constexpr double kLinkGBps = 450.0;

// Ring (chain for broadcast) with no protocol latencies: the fabric's own closed form.
nlohmann::json run(const platforms::PlatformConfig& p, const workloads::Job& job,
                   uint64_t chunk_bytes = 128 * 1024) {
  return run_in_child([&] {
    app::SimulationOptions o;
    o.chunk_bytes = chunk_bytes;
    o.collectives = testing::ideal_collectives(models::CollectiveAlgorithm::Ring);
    return testing::summarize(app::simulate(p, job, o));
  });
}

// The latency of one chunk's path GPU -> switch -> GPU beyond its serialization.
double path_latency_s(const platforms::PlatformConfig& p) {
  return (2 * p.node.nvlink.link.latency_ns + p.node.nvlink.switch_latency_ns) * 1e-9;
}

struct RingCase {
  int n;
  uint64_t bytes;
};

class RingAllReduce : public ::testing::TestWithParam<RingCase> {};

TEST_P(RingAllReduce, MatchesClosedForm) {
  const auto [n, bytes] = GetParam();
  const auto p = ideal_node(n, kLinkGBps);
  const nlohmann::json r = run(p, one_collective(n, CollectiveKind::AllReduce, bytes));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_FALSE(r["deadlocked"].get<bool>());
  const double B = kLinkGBps * 1e9;
  // 2(n-1)/n S/B plus the latency terms: with chunk pipelining the steps overlap, so what is
  // left is one path latency and the store-and-forward of one chunk at the switch.
  const double bandwidth_term = 2.0 * (n - 1) / n * double(bytes) / B;
  const double latency_terms = path_latency_s(p) + 128.0 * 1024 / B;
  const double expected = bandwidth_term + latency_terms;
  const double simulated = r["iteration_time_s"];
  EXPECT_NEAR(simulated, expected, 0.02 * expected)
      << "n=" << n << " S=" << bytes << " bandwidth term " << bandwidth_term;
  // Data conservation: every rank sends and receives 2(n-1) segments of ceil(S/n) bytes.
  const uint64_t segment = (bytes + n - 1) / n;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(r["sent"][rank].get<uint64_t>(), 2ull * (n - 1) * segment);
    EXPECT_EQ(r["received"][rank].get<uint64_t>(), 2ull * (n - 1) * segment);
  }
  // Each chunk crosses two links (GPU -> switch -> GPU).
  EXPECT_EQ(r["total_link_bytes"].get<uint64_t>(), 2ull * n * 2ull * (n - 1) * segment);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingAllReduce,
                         ::testing::Values(RingCase{8, 64ull << 20}, RingCase{8, 256ull << 20},
                                           RingCase{8, 1ull << 30}, RingCase{4, 64ull << 20},
                                           RingCase{2, 128ull << 20}, RingCase{8, (96ull << 20) + 12345}));

// The collective engine's messages in flight (models/collectives/few_by_key.h): found by key,
// made value-initialized on first use, erased without disturbing the others.
TEST(FewByKey, FindsMakesAndErasesByKey) {
  models::FewByKey<int> few;
  EXPECT_EQ(few.find(7), nullptr);
  EXPECT_EQ(few[7], 0);  // made
  few[7] = 70;
  few[3] = 30;
  few[9] = 90;
  EXPECT_EQ(few.size(), 3u);
  ASSERT_NE(few.find(3), nullptr);
  EXPECT_EQ(*few.find(3), 30);
  few.erase(7);  // the first: the last moves into its place
  few.erase(42);  // absent: nothing
  EXPECT_EQ(few.size(), 2u);
  EXPECT_EQ(few.find(7), nullptr);
  EXPECT_EQ(few[9], 90);
  EXPECT_EQ(few[3], 30);
  std::vector<uint64_t> keys;
  for (const auto& [key, value] : few) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<uint64_t>{9, 3}));
  // One search for a caller that reads and erases, or adds.
  EXPECT_EQ(few.position(5), few.kNone);
  few.add(5, 50);
  const size_t at = few.position(9);
  ASSERT_NE(at, few.kNone);
  EXPECT_EQ(few.at(at), 90);
  few.erase_at(at);
  EXPECT_EQ(few.find(9), nullptr);
  EXPECT_EQ(few[5], 50);
  EXPECT_EQ(few.size(), 2u);
}

TEST(RingCollectives, ReduceScatterAndAllGatherTakeHalfAnAllReduce) {
  const int n = 8;
  const uint64_t bytes = 256ull << 20;
  const auto p = ideal_node(n, kLinkGBps);
  const double B = kLinkGBps * 1e9;
  const double expected = double(n - 1) / n * double(bytes) / B + path_latency_s(p) + 128.0 * 1024 / B;
  for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    const nlohmann::json r = run(p, one_collective(n, kind, bytes));
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_NEAR(r["iteration_time_s"].get<double>(), expected, 0.02 * expected)
        << workloads::to_string(kind);
    for (int rank = 0; rank < n; ++rank)
      EXPECT_EQ(r["received"][rank].get<uint64_t>(), uint64_t(n - 1) * (bytes / n));
  }
}

TEST(RingCollectives, PacketOverheadLowersBandwidthByTheWireRatio) {
  const int n = 8;
  const uint64_t bytes = 512ull << 20;
  auto p = ideal_node(n, kLinkGBps);
  p.node.nvlink.link.packet_overhead_bytes = 32;
  p.node.nvlink.link.max_packet_bytes = 256;
  const double B_eff = kLinkGBps * 1e9 * 256.0 / (256.0 + 32.0);
  const double expected = 2.0 * (n - 1) / n * double(bytes) / B_eff;
  const nlohmann::json r = run(p, one_collective(n, CollectiveKind::AllReduce, bytes));
  EXPECT_NEAR(r["iteration_time_s"].get<double>(), expected, 0.02 * expected);
}

TEST(RingCollectives, AllToAllAndBroadcastDeliverEveryByte) {
  const int n = 4;
  const uint64_t bytes = 64ull << 20;
  const auto p = ideal_node(n, kLinkGBps);
  const nlohmann::json a2a = run(p, one_collective(n, CollectiveKind::AllToAll, bytes));
  for (int rank = 0; rank < n; ++rank)
    EXPECT_EQ(a2a["received"][rank].get<uint64_t>(), uint64_t(n - 1) * (bytes / n));
  // Direct all-to-all: each GPU sends (n-1)/n S over its own link at B.
  const double B = kLinkGBps * 1e9;
  EXPECT_NEAR(a2a["iteration_time_s"].get<double>(), double(n - 1) / n * bytes / B,
              0.03 * double(n - 1) / n * bytes / B);
  const nlohmann::json bc = run(p, one_collective(n, CollectiveKind::Broadcast, bytes));
  EXPECT_EQ(bc["received"][0].get<uint64_t>(), 0u);  // the root
  for (int rank = 1; rank < n; ++rank) EXPECT_EQ(bc["received"][rank].get<uint64_t>(), bytes);
  // A pipelined chain: S/B plus one chunk per extra hop.
  EXPECT_NEAR(bc["iteration_time_s"].get<double>(), bytes / B, 0.03 * bytes / B);
}

TEST(LinkSharing, TwoTransfersIntoOneOutputPortEachGetHalf) {
  // GPU 0 and GPU 1 each send S to GPU 2 at the same time: the switch port towards GPU 2
  // arbitrates round-robin, so each transfer gets B/2 and both finish at 2S/B.
  const uint64_t bytes = 256ull << 20;
  workloads::Job job;
  for (int r = 0; r < 4; ++r) {
    testing::ProgramBuilder b(job, r);
    if (r == 0 || r == 1) b.p2p(true, "send", "comm", 2, bytes, 1);
    if (r == 2) {
      b.p2p(false, "recv_from_0", "recv0", 0, bytes, 1);
      b.p2p(false, "recv_from_1", "recv1", 1, bytes, 1);
    }
    if (r == 3) b.compute("idle", "compute", 0, 1);
    b.finish();
  }
  const auto p = ideal_node(4, kLinkGBps);
  const nlohmann::json r = run_in_child([&] {
    app::SimulationOptions o;
    o.collectives = testing::ideal_collectives(models::CollectiveAlgorithm::Ring);
    o.trace = true;
    return testing::summarize(app::simulate(p, job, o));
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const double B = kLinkGBps * 1e9;
  const double expected = 2.0 * double(bytes) / B;
  const auto& spans = r["spans"][2];
  ASSERT_EQ(spans.size(), 2u);
  for (const auto& s : spans)
    EXPECT_NEAR(s["end"].get<double>(), expected, 0.01 * expected);
  // While both run, each has delivered half: they end within one chunk time of each other.
  EXPECT_NEAR(spans[0]["end"].get<double>(), spans[1]["end"].get<double>(), 2 * 128.0 * 1024 / B);
  // Backpressure slowed the senders to B/2: their sends end near 2S/B too, not at S/B.
  EXPECT_GT(r["finish_s"][0].get<double>(), 0.95 * expected);
  EXPECT_GT(r["finish_s"][1].get<double>(), 0.95 * expected);
}

TEST(LinkSharing, TinySwitchBuffersStillDeliverEverything) {
  const int n = 8;
  const uint64_t bytes = 64ull << 20;
  auto p = ideal_node(n, kLinkGBps);
  p.switch_buffer_bytes = 1;  // one chunk per port
  p.gpu_buffer_bytes = 1;
  const nlohmann::json r = run(p, one_collective(n, CollectiveKind::AllReduce, bytes));
  ASSERT_FALSE(r["deadlocked"].get<bool>());
  const uint64_t segment = bytes / n;
  for (int rank = 0; rank < n; ++rank)
    EXPECT_EQ(r["received"][rank].get<uint64_t>(), 2ull * (n - 1) * segment);
}


// Calls from two streams on one communicator meet their peers' same call, the one at the same
// place in program order (as NCCL, where the host enqueues calls in program order), whatever
// order the streams' dependencies let them start in. ZeRO-3 prefetches parameter all-gathers on
// one stream while reduce-scatters of gradients run on another, both over dp; with hundreds of
// ranks the two interleave differently on different ranks (the GPT 530B run on 1,120 GPUs).
// Here even ranks start the all-gather first and odd ranks the (tiny) reduce-scatter first.
workloads::Job two_streams_one_communicator(int n, uint64_t gather_bytes, uint64_t reduce_bytes) {
  workloads::Job job;
  workloads::Communicator all{"dp", {}};
  for (int r = 0; r < n; ++r) all.ranks.push_back(r);
  job.communicators.push_back(all);
  for (int r = 0; r < n; ++r) {
    testing::ProgramBuilder b(job, r);
    const workloads::OpId wait = b.compute("wait", "compute", 1e12, 0);  // about a millisecond
    const bool gather_first = r % 2 == 0;
    b.collective("param_allgather", "gather", CollectiveKind::AllGather, 0, gather_bytes,
                 gather_first ? std::vector<workloads::OpId>{} : std::vector<workloads::OpId>{wait});
    b.collective("grad_reducescatter", "reduce", CollectiveKind::ReduceScatter, 0, reduce_bytes,
                 gather_first ? std::vector<workloads::OpId>{wait} : std::vector<workloads::OpId>{});
    b.finish();
  }
  return job;
}

class CallMatching : public ::testing::TestWithParam<platforms::Fidelity> {};

TEST_P(CallMatching, CallsFromTwoStreamsMeetInProgramOrder) {
  const int n = 8;
  const uint64_t gather = 8ull << 20, reduce = 1024;
  const auto p = ideal_node(n, kLinkGBps);
  const workloads::Job job = two_streams_one_communicator(n, gather, reduce);
  const nlohmann::json r = run_in_child([&] {
    app::SimulationOptions o;
    o.collectives = testing::ideal_collectives(models::CollectiveAlgorithm::Ring);
    o.fidelity = GetParam();
    o.trace = true;  // the calls' spans
    return testing::summarize(app::simulate(p, job, o));
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_FALSE(r["deadlocked"].get<bool>()) << r["deadlock"].get<std::string>();
  // Each call needs every member, and half the members start it only after their wait: no
  // call ends before the shortest wait does (a call matched with a peer's other call would).
  double wait_s = r["compute_s"][0].get<double>();
  for (int rank = 1; rank < n; ++rank) wait_s = std::min(wait_s, r["compute_s"][rank].get<double>());
  ASSERT_GT(wait_s, 0.0);
  for (int rank = 0; rank < n; ++rank) {
    int calls = 0;
    for (const auto& span : r["spans"][rank]) {
      if (span["op"].get<int>() == 0) continue;  // the wait itself
      ++calls;
      EXPECT_GT(span["end"].get<double>(), wait_s) << "rank " << rank << " op " << span["op"];
    }
    EXPECT_EQ(calls, 2) << "rank " << rank;
  }
  // Every rank gets (n-1) segments of each call: the all-gather's with the all-gather's.
  const uint64_t expected = uint64_t(n - 1) * ((gather + n - 1) / n + (reduce + n - 1) / n);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(r["received"][rank].get<uint64_t>(), expected) << "rank " << rank;
    EXPECT_EQ(r["sent"][rank].get<uint64_t>(), expected) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Fidelities, CallMatching,
                         ::testing::Values(platforms::Fidelity::Packet, platforms::Fidelity::Flow),
                         [](const ::testing::TestParamInfo<platforms::Fidelity>& info) {
                           return std::string(info.param == platforms::Fidelity::Packet ? "Packet" : "Flow");
                         });

}  // namespace
}  // namespace tessera
