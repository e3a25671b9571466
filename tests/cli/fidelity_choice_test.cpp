// `--fidelity auto` (sc_main/fidelity_choice.h): the chunks packet fidelity would send, and the
// mode each kind of run gets.
#include "sc_main/fidelity_choice.h"

#include <gtest/gtest.h>

#include <memory>

#include "platforms/platform_file.h"

namespace tessera::app {
namespace {

using workloads::CollectiveKind;
using workloads::OpKind;

workloads::Op collective(CollectiveKind kind, uint64_t bytes) {
  workloads::Op op;
  op.kind = OpKind::Collective;
  op.collective = kind;
  op.message_bytes = bytes;
  return op;
}

workloads::Op message(OpKind kind, uint64_t bytes) {
  workloads::Op op;
  op.kind = kind;
  op.message_bytes = bytes;
  return op;
}

// `ranks` ranks sharing one program of `ops`.
workloads::Job job_of(int ranks, const std::vector<workloads::Op>& ops) {
  auto program = std::make_shared<workloads::Program>();
  program->ops = ops;
  workloads::Job job;
  for (int r = 0; r < ranks; ++r) {
    workloads::Rank rank;
    rank.rank = r;
    rank.program = program;
    job.ranks.push_back(rank);
  }
  return job;
}

constexpr uint64_t kChunk = 128 * 1024;
constexpr uint64_t kMiB = 1024 * 1024;

TEST(PacketChunks, AllReduceSendsTwiceItsBufferOtherCollectivesAndSendsOnceReceivesNothing) {
  EXPECT_EQ(packet_chunks(job_of(1, {collective(CollectiveKind::AllReduce, kMiB)}), kChunk, 1), 16u);
  EXPECT_EQ(packet_chunks(job_of(1, {collective(CollectiveKind::AllGather, kMiB)}), kChunk, 1), 8u);
  EXPECT_EQ(packet_chunks(job_of(1, {collective(CollectiveKind::Barrier, 0)}), kChunk, 1), 0u);
  EXPECT_EQ(packet_chunks(job_of(1, {message(OpKind::Send, kMiB), message(OpKind::Recv, kMiB)}), kChunk, 1), 8u);
  EXPECT_EQ(packet_chunks(job_of(1, {collective(CollectiveKind::AllGather, 1)}), kChunk, 1), 1u);  // a partial chunk is one
}

TEST(PacketChunks, EveryRankAndEveryIterationCounts) {
  const workloads::Job job = job_of(8, {collective(CollectiveKind::AllReduce, kMiB)});
  EXPECT_EQ(packet_chunks(job, kChunk, 1), 8u * 16u);
  EXPECT_EQ(packet_chunks(job, kChunk, 3), 3u * 8u * 16u);
  EXPECT_EQ(packet_chunks(job, 2 * kChunk, 1), 8u * 8u);
}

TEST(AutoFidelity, FewChunksRunInPacketFidelityManyInFlow) {
  const platforms::PlatformConfig node = platforms::load_platform("dgx-a100");
  const FidelityChoice small = choose_fidelity(node, job_of(8, {collective(CollectiveKind::AllReduce, 64 * kMiB)}), kChunk, 1);
  EXPECT_EQ(small.fidelity, platforms::Fidelity::Packet);
  EXPECT_NE(small.reason.find("8192 chunks"), std::string::npos) << small.reason;
  // 8 ranks x 2 x 512 GiB / 128 KiB = 67 M chunks: minutes of packet simulation.
  const FidelityChoice large = choose_fidelity(node, job_of(8, {collective(CollectiveKind::AllReduce, 512 * 1024 * kMiB)}), kChunk, 1);
  EXPECT_EQ(large.fidelity, platforms::Fidelity::Flow);
  EXPECT_NE(large.reason.find("67 M chunks"), std::string::npos) << large.reason;
  // The same bytes over enough iterations cross the bound too.
  EXPECT_EQ(choose_fidelity(node, job_of(8, {collective(CollectiveKind::AllReduce, 64 * kMiB)}), kChunk, 10000).fidelity,
            platforms::Fidelity::Flow);
}

TEST(AutoFidelity, MoreThan64GpusRunInFlowFidelity) {
  const platforms::PlatformConfig nine = platforms::load_platform("dgx-a100", {"nodes=9"});
  const FidelityChoice c = choose_fidelity(nine, job_of(72, {}), kChunk, 1);
  EXPECT_EQ(c.fidelity, platforms::Fidelity::Flow);
  EXPECT_NE(c.reason.find("72 GPUs"), std::string::npos) << c.reason;
  EXPECT_EQ(choose_fidelity(platforms::load_platform("dgx-a100", {"nodes=8"}), job_of(64, {}), kChunk, 1).fidelity,
            platforms::Fidelity::Packet);
}

TEST(AutoFidelity, RtlBlocksAtPortsRunInPacketFidelityAtAnySize) {
  const platforms::PlatformConfig rtl = platforms::load_platform("dgx-a100", {"nodes=9", "node.nvswitch.arbiter=rtl"});
  const FidelityChoice c = choose_fidelity(rtl, job_of(72, {collective(CollectiveKind::AllReduce, 512 * 1024 * kMiB)}), kChunk, 1);
  EXPECT_EQ(c.fidelity, platforms::Fidelity::Packet);
  EXPECT_NE(c.reason.find("RTL"), std::string::npos) << c.reason;
}

}  // namespace
}  // namespace tessera::app
