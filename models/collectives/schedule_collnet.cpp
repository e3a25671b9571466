#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::TransferPurpose;

// CollNet Direct (NCCL src/device/all_reduce.h runCollNetDirect).
void collnet_schedule(ScheduleBuilder& b, const std::vector<int>& node_members,
                      const protocol::AggregationTree* tree, bool nvls, float nvls_wire_factor) {
  const int C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  // NCCL's CollNet Direct: GPU q of every node owns shard q. Reduce-scatter in the node,
  // the node sums of shard q through the aggregation tree of the GPUs q (each through its
  // own NIC: the network switches add them up and send the sum back to each), all-gather in
  // the node. Inside the node NVLS where the NVSwitches reduce, else direct.
  const int g = static_cast<int>(node_members.size());
  const int local =
      static_cast<int>(std::find(node_members.begin(), node_members.end(), b.call.rank) - node_members.begin());
  auto node_rank = [&](int k) { return node_members[((local + k) % g + g) % g]; };
  const uint64_t shard = ceil_div(bytes, g);
  const int phases = g > 1 ? 3 : 1;  // in the node, the network, in the node
  auto in_node = [&](bool gather) {
    Phase& ph = b.add(b.after_last());
    if (nvls) {
      ph.purpose = gather ? TransferPurpose::SwitchMulticast : TransferPurpose::SwitchReduce;
      ph.members = node_members.data();
      ph.member_count = static_cast<uint32_t>(g);
      ph.wire_factor = nvls_wire_factor;
      auto nvls_transfer = [&](int peer) { return b.windowed(peer, shard, C, phases); };
      if (gather) ph.sends.push_back(nvls_transfer(b.call.rank));
      for (int k = 0; k < g; ++k) {
        if (gather) ph.receives.push_back(nvls_transfer(node_rank(-k)));
        else ph.sends.push_back(nvls_transfer(node_rank(k)));
      }
      if (!gather) ph.receives.push_back(nvls_transfer(-1));
      return;
    }
    for (int k = 1; k < g; ++k) {
      ph.sends.push_back(b.windowed(node_rank(k), shard, C, phases));
      ph.receives.push_back(b.windowed(node_rank(-k), shard, C, phases));
    }
  };
  if (g > 1) in_node(false);
  Phase& ph = b.add(b.after_last());
  ph.purpose = TransferPurpose::NetworkReduce;
  ph.tree = tree;
  ph.network = true;
  ph.sends.push_back(b.windowed(b.call.rank, shard, C, phases));
  ph.receives.push_back(b.windowed(-1, shard, C, phases));
  if (g > 1) in_node(true);
}

}  // namespace tessera::models
