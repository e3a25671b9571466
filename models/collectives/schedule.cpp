#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

namespace {
// Steady state (flow fidelity): the most chunks a transfer starts with, kept where a schedule
// keeps its phases as they are (one phase of one step; the fewest windows of an in-switch
// transfer). Merged schedules and the tree cut their transfers again
// (CollectiveEngine::steady_state, steady_tree).
constexpr uint64_t kFlowChunksPerTransfer = 16;
}  // namespace

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

TreeLinks double_binary_tree(int count, int index, int t) {
  // Tree 1 is tree 0's mirror image over an even count, and tree 0 shifted by one member over
  // an odd count (NCCL's ncclGetDtree): mirrored, an odd count's middle member would be inner
  // in both trees and carry twice the others' traffic.
  const bool odd = count % 2 == 1;
  auto to_tree = [&](int m) { return t == 0 ? m : odd ? (m - 1 + count) % count : count - 1 - m; };
  auto from_tree = [&](int m) { return t == 0 ? m : odd ? (m + 1) % count : count - 1 - m; };
  int up, c0, c1;
  binary_tree(count, to_tree(index), up, c0, c1);
  TreeLinks links;
  if (up >= 0) links.parent = from_tree(up);
  for (int c : {c0, c1})
    if (c >= 0) links.children.push_back(from_tree(c));
  return links;
}

int ScheduleBuilder::rank_at(int position) const {
  const int size = n();
  return (*call.ranks)[size_t(((position % size) + size) % size)];
}

Phase& ScheduleBuilder::add(int after) {
  phases_.emplace_back();
  phases_.back().after = after;
  return phases_.back();
}

Transfer ScheduleBuilder::sized(int peer, uint64_t bytes, uint64_t chunk) const {
  Transfer t;
  t.peer = peer;
  t.bytes = bytes;
  if (bytes == 0) return t;
  t.chunk_bytes = static_cast<uint32_t>(std::min<uint64_t>(chunk, kMaxChunkBytes));
  t.chunks = static_cast<uint32_t>(ceil_div(bytes, t.chunk_bytes));
  return t;
}

uint32_t ScheduleBuilder::step_chunk(uint64_t bytes, int channels, uint64_t chunk_bytes) const {
  const uint64_t chunk = chunk_size(bytes, chunk_bytes > 0 ? chunk_bytes : call.chunk_bytes, channels);
  return static_cast<uint32_t>(std::min<uint64_t>(chunk, kMaxChunkBytes));
}

Transfer ScheduleBuilder::transfer(int peer, uint64_t bytes, int channels, uint64_t chunk_bytes) const {
  const uint64_t chunk = chunk_size(bytes, chunk_bytes > 0 ? chunk_bytes : call.chunk_bytes, channels);
  if (!call.steady_state) return sized(peer, bytes, chunk);
  // Flow fidelity sends fewer, larger chunks; the step keeps packet fidelity's (the latency
  // chain, the rate cap).
  Transfer t = sized(peer, bytes, std::max(chunk, ceil_div(bytes, kFlowChunksPerTransfer)));
  t.step_chunk_bytes = step_chunk(bytes, channels, chunk_bytes);
  return t;
}

Transfer ScheduleBuilder::windowed(int peer, uint64_t bytes, int channels, int phases, uint64_t chunk_bytes) const {
  if (!call.steady_state) return transfer(peer, bytes, channels, chunk_bytes);
  const uint64_t nccl = chunk_bytes > 0 ? chunk_bytes : call.chunk_bytes;
  const uint64_t share = std::max<uint64_t>(1, call.slots / uint64_t(std::max(1, phases)));
  const uint64_t window =
      std::clamp(nccl * share, ceil_div(bytes, kMaxChunksPerTransfer), ceil_div(bytes, kFlowChunksPerTransfer));
  Transfer t = sized(peer, bytes, std::max(chunk_size(bytes, nccl, channels), window));
  t.step_chunk_bytes = step_chunk(bytes, channels, nccl);  // (the fill)
  return t;
}

}  // namespace tessera::models
