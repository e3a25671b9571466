#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

namespace {
// Steady state (flow fidelity): chunks per transfer of a schedule that keeps its phases (tree),
// enough to pipeline it through the tree's depth.
constexpr uint64_t kFlowChunksPerTransfer = 16;
}  // namespace

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

int ScheduleBuilder::rank_at(int position) const {
  const int size = n();
  return (*call.ranks)[size_t(((position % size) + size) % size)];
}

Phase& ScheduleBuilder::add(int after) {
  phases_.emplace_back();
  phases_.back().after = after;
  return phases_.back();
}

Transfer ScheduleBuilder::transfer(int peer, uint64_t bytes, int channels, uint64_t chunk_bytes) const {
  Transfer t;
  t.peer = peer;
  t.bytes = bytes;
  if (bytes == 0) return t;
  uint64_t chunk = chunk_size(bytes, chunk_bytes > 0 ? chunk_bytes : call.chunk_bytes, channels);
  if (call.steady_state) chunk = std::max(chunk, ceil_div(bytes, kFlowChunksPerTransfer));
  t.chunk_bytes = static_cast<uint32_t>(std::min<uint64_t>(chunk, kMaxChunkBytes));
  t.chunks = static_cast<uint32_t>(ceil_div(bytes, t.chunk_bytes));
  return t;
}

}  // namespace tessera::models
