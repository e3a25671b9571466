#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {

using protocol::TransferPurpose;

// NVLS-tree (NCCL src/device/all_reduce.h runNvlsTree): GPU q of every node owns shard q. The
// NVSwitches add up the node's shard q as its members write it (multimem reductions), the
// owners of shard q in every node add their nodes' sums up a double binary tree through their
// own NICs and send the total back down it (each tree carrying half of the shard), and each
// owner multicasts the total through the switches to its node. The switches do the node's
// reduction, so a GPU's NVLinks carry its data once each way, not a ring's 2 (g-1)/g twice;
// the network carries each shard as NCCL's tree does.
void nvls_tree_schedule(ScheduleBuilder& b, const std::vector<int>& node, const std::vector<int>& across,
                        uint64_t chunk_bytes, float nvls_wire_factor) {
  const int C = b.call.channels;
  const int g = static_cast<int>(node.size());
  const int local = static_cast<int>(std::find(node.begin(), node.end(), b.call.rank) - node.begin());
  const int member = static_cast<int>(std::find(across.begin(), across.end(), b.call.rank) - across.begin());
  auto node_rank = [&](int k) { return node[size_t(((local + k) % g + g) % g)]; };
  const uint64_t shard = ceil_div(b.call.bytes, uint64_t(g));
  // (Flow fidelity runs the phases at once, CollectiveEngine::steady_state: a transfer there
  // is at most 16 flows, as the tree's.)
  auto nvls = [&](int peer) { return b.transfer(peer, shard, C, chunk_bytes); };
  auto in_switch = [&](Phase& ph, TransferPurpose purpose) {
    ph.purpose = purpose;
    ph.members = node.data();
    ph.member_count = static_cast<uint32_t>(g);
    ph.wire_factor = nvls_wire_factor;
  };
  // Every shard of this rank's data to the switch; the node's sum of the own shard comes back.
  Phase& reduce = b.add(-1);
  in_switch(reduce, TransferPurpose::SwitchReduce);
  for (int k = 0; k < g; ++k) reduce.sends.push_back(nvls(node_rank(k)));
  reduce.receives.push_back(nvls(-1));
  const int reduced = b.last();
  const auto [tree0, tree1] = tree_across(b, across, member, shard, reduced, chunk_bytes);
  // The total of the own shard through the switch to every member of the node, once both
  // trees' halves are in.
  Phase& multicast = b.add(tree0 >= 0 ? tree0 : tree1);
  multicast.also_after = tree0 >= 0 ? tree1 : -1;
  in_switch(multicast, TransferPurpose::SwitchMulticast);
  multicast.sends.push_back(nvls(b.call.rank));
  for (int k = 0; k < g; ++k) multicast.receives.push_back(nvls(node_rank(-k)));
}

}  // namespace tessera::models
