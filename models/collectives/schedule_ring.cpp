#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::CollectiveOp;

namespace {
// Most phases the rings of one call build (ring_channels: a chain of phases per ring).
constexpr uint32_t kMaxRingPhases = 4096;
}  // namespace

// Ring: NCCL's pipelined ring (src/device/all_reduce.h runRing): n - 1 reduce steps then n - 1
// gather steps, each a segment to the ring successor; broadcast and reduce as a chain.
void ring_schedule(ScheduleBuilder& b, const CommunicatorShape& shape) {
  const int n = b.n(), p = b.call.position, C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  const CollectiveOp kind = b.call.kind;
  const bool reduce_part = b.call.reduce_part, gather_part = b.call.gather_part;
  if (kind == CollectiveOp::Broadcast || kind == CollectiveOp::Reduce) {
    // A chain along the ring: broadcast starts at the root (position 0), reduce ends there.
    const int q = kind == CollectiveOp::Broadcast ? p : (p + n - 1) % n;
    Phase& ph = b.add(q > 0 ? 0 : -1);
    if (q + 1 < n) ph.sends.push_back(b.transfer(b.rank_at(p + 1), bytes, C));
    if (q > 0) ph.receives.push_back(b.transfer(b.rank_at(p - 1), bytes, C));
    return;
  }
  // Every step sends one segment to the ring successor; across nodes each channel has its
  // own ring (ring_channels) and carries its share of the segment.
  const uint64_t segment = ceil_div(bytes, n);
  const int steps = (reduce_part ? n - 1 : 0) + (gather_part ? n - 1 : 0);
  // Every ring NCCL has (one per member of a node, so every GPU's way out of its node carries
  // its share). Each ring is a chain of phases, at most kMaxRingPhases in all: on very large
  // communicators a phase carries several consecutive steps of its ring (Transfer::steps, and
  // the chunk of one step for the latency chain they stand for).
  // Flow fidelity merges a ring's steps into one transfer each way (CollectiveEngine::
  // steady_state): one phase per ring carries them all, as it would after merging.
  const std::vector<RingChannels> rings = ring_channels(shape, p, C);
  const int per_ring = std::max(1, static_cast<int>(kMaxRingPhases / uint32_t(rings.size())));
  const int group = b.call.steady_state ? std::max(1, steps) : std::max(1, (steps + per_ring - 1) / per_ring);
  auto on = [&](const RingChannels& ring, int position, int k) {
    const uint64_t step_bytes = ceil_div(segment * ring.channels, C);
    Transfer t = b.transfer(b.rank_at(position), step_bytes * uint64_t(k), ring.channels);
    t.first_channel = static_cast<uint16_t>(ring.first_channel);
    t.stride = static_cast<uint16_t>(ring.stride);
    t.channels = static_cast<uint16_t>(ring.channels);
    if (k > 1) {
      t.steps = static_cast<uint32_t>(k);
      t.step_chunk_bytes = b.step_chunk(step_bytes, ring.channels);
    }
    return t;
  };
  // A ring's steps wait for its own previous step only: the rings are independent.
  for (const RingChannels& ring : rings) {
    int previous = -1;
    for (int s = 0; s < steps; s += group) {
      const int k = std::min(group, steps - s);
      Phase& ph = b.add(previous);
      ph.sends.push_back(on(ring, ring.next, k));
      ph.receives.push_back(on(ring, ring.previous, k));
      previous = b.last();
    }
  }
}

}  // namespace tessera::models
