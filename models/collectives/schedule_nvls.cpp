#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::CollectiveOp;
using protocol::TransferPurpose;

// NVLS: NVLink SHARP (NCCL src/device/all_reduce.h runNvls): every shard to the NVSwitch,
// which reduces it and multicasts the sum back to every member.
void nvls_schedule(ScheduleBuilder& b, uint64_t nvls_chunk) {
  const std::vector<int>& ranks = b.ranks();
  const int n = b.n(), p = b.call.position;
  const uint64_t bytes = b.call.bytes;
  const bool reduce_part = b.call.reduce_part, gather_part = b.call.gather_part;
  const uint64_t shard = ceil_div(bytes, n);
  // Every transfer is one shard in NCCL's NVLS chunks; chunks go round the channels, so the
  // switch reduces the next chunk of every channel while the last ones are multicast.
  const Transfer piece = b.windowed(-1, shard, 1, int(reduce_part) + int(gather_part), nvls_chunk);
  auto to = [&piece](int peer) {
    Transfer t = piece;
    t.peer = peer;
    return t;
  };
  if (reduce_part) {
    // Every shard to the switch; the sum of the own shard comes back.
    Phase& ph = b.add(-1);
    ph.purpose = TransferPurpose::SwitchReduce;
    ph.members = ranks.data();
    ph.member_count = static_cast<uint32_t>(n);
    for (int k = 0; k < n; ++k) ph.sends.push_back(to(b.rank_at(p + k)));
    ph.receives.push_back(to(-1));
  }
  if (gather_part) {
    // The own shard (its sum) through the switch to every member.
    Phase& ph = b.add(b.after_last());
    ph.purpose = TransferPurpose::SwitchMulticast;
    ph.members = ranks.data();
    ph.member_count = static_cast<uint32_t>(n);
    ph.sends.push_back(to(b.call.rank));
    for (int k = 0; k < n; ++k) ph.receives.push_back(to(b.rank_at(p - k)));
  }
}

}  // namespace tessera::models
