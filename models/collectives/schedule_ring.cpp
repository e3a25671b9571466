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
  // (Each ring is a chain of phases: at most kMaxRingPhases in all, so rings give way to
  // fewer, wider ones on very large communicators.)
  const int ring_budget = std::max(1, static_cast<int>(kMaxRingPhases / uint32_t(std::max(1, steps))));
  const std::vector<RingChannels> rings = ring_channels(shape, p, C, ring_budget);
  auto on = [&](const RingChannels& ring, int position) {
    Transfer t = b.transfer(b.rank_at(position), ceil_div(segment * ring.channels, C), ring.channels);
    t.first_channel = static_cast<uint16_t>(ring.first_channel);
    t.stride = static_cast<uint16_t>(ring.stride);
    t.channels = static_cast<uint16_t>(ring.channels);
    return t;
  };
  // A ring's steps wait for its own previous step only: the rings are independent.
  for (const RingChannels& ring : rings) {
    const int first = b.last() + 1;
    for (int s = 0; s < steps; ++s) {
      Phase& ph = b.add(s > 0 ? first + s - 1 : -1);
      ph.sends.push_back(on(ring, ring.next));
      ph.receives.push_back(on(ring, ring.previous));
    }
  }
}

}  // namespace tessera::models
