#include "sc_main/fidelity_choice.h"

#include <cmath>
#include <map>

#include "sc_main/report.h"

namespace tessera::app {

namespace {

// Bytes one rank puts on the wire for `op` (receives are counted at their sender).
double wire_bytes(const workloads::Op& op) {
  if (op.kind == workloads::OpKind::Send) return double(op.message_bytes);
  if (op.kind != workloads::OpKind::Collective) return 0;
  switch (op.collective) {
    case workloads::CollectiveKind::AllReduce: return 2.0 * double(op.message_bytes);
    case workloads::CollectiveKind::Barrier: return 0;
    default: return double(op.message_bytes);
  }
}

}  // namespace

uint64_t packet_chunks(const workloads::Job& job, uint64_t chunk_bytes, uint64_t iterations) {
  std::map<const workloads::Program*, double> per_program;  // a shared program is summed once
  double chunks = 0;
  for (const workloads::Rank& rank : job.ranks) {
    if (!rank.program) continue;
    auto [it, added] = per_program.emplace(rank.program.get(), 0.0);
    if (added)
      for (const workloads::Op& op : rank.program->ops) it->second += std::ceil(wire_bytes(op) / double(chunk_bytes));
    chunks += it->second;
  }
  chunks *= double(iterations);
  return chunks >= 1.8e19 ? UINT64_MAX : uint64_t(chunks);
}

FidelityChoice choose_fidelity(const platforms::PlatformConfig& platform, const workloads::Job& job,
                               uint64_t chunk_bytes, uint64_t iterations) {
  if (platform.uses_rtl()) return {platforms::Fidelity::Packet, "auto: the platform has RTL blocks at ports, which only packet fidelity has"};
  if (platform.gpu_count() > kPacketFidelityGpus)
    return {platforms::Fidelity::Flow, "auto: " + std::to_string(platform.gpu_count()) + " GPUs, more than the " +
                                           std::to_string(kPacketFidelityGpus) + " packet fidelity is kept for"};
  const uint64_t chunks = packet_chunks(job, chunk_bytes, iterations);
  const std::string count = chunks >= 1'000'000 ? format("%.0f M", double(chunks) / 1e6) : std::to_string(chunks);
  if (chunks > kPacketFidelityChunks)
    return {platforms::Fidelity::Flow, "auto: packet fidelity would send about " + count + " chunks (more than " +
                                           format("%.0f M", double(kPacketFidelityChunks) / 1e6) + ": minutes of simulation)"};
  return {platforms::Fidelity::Packet, "auto: about " + count + " chunks, few enough for packet fidelity"};
}

}  // namespace tessera::app
