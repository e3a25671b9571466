#include "models/collectives/schedule.h"

#include <algorithm>
#include <utility>

namespace tessera::models {

using protocol::CollectiveOp;

// Tree: NCCL's double binary tree (src/graph/trees.cc): a chain inside each node, and two
// binary trees over the nodes, each carrying half of the data (one the mirror of the other, or
// over an odd count of nodes the other shifted by one).
// NCCL builds a tree per channel, each channel's chain entering the node at the GPU nearest its
// NIC (src/graph/search.cc), so the channels' trees leave every node through all its NICs:
// across nodes of the same members, channel group r's chain starts at member r (as
// ring_channels' rings do) and carries its share of the data.
namespace {

// The members of a communicator grouped by node, in communicator order (consecutive members on
// one node form a group). Where the shape says every node's members are one block of g
// (node_blocks), group k is positions [k g, (k + 1) g): nothing to scan, as each of n ranks
// would scan all n members for every call.
class NodeRuns {
 public:
  NodeRuns(const std::vector<int>& ranks, int gpus_per_node, const CommunicatorShape& shape) {
    const int n = static_cast<int>(ranks.size());
    if (shape.node_blocks && shape.gpus_per_node > 0 && shape.ranks == n) {
      block_ = shape.gpus_per_node;
      nodes_ = n / block_;
      return;
    }
    const int g = gpus_per_node;
    node_of_.resize(size_t(n));
    for (int i = 0; i < n; ++i) {
      const int node = g > 0 ? ranks[size_t(i)] / g : 0;
      if (i == 0 || node != (g > 0 ? ranks[size_t(i) - 1] / g : 0)) start_.push_back(i), size_.push_back(0);
      node_of_[size_t(i)] = static_cast<int>(start_.size()) - 1;
      ++size_.back();
    }
    nodes_ = static_cast<int>(start_.size());
  }
  int nodes() const { return nodes_; }
  int start(int group) const { return block_ > 0 ? group * block_ : start_[size_t(group)]; }
  int size(int group) const { return block_ > 0 ? block_ : size_[size_t(group)]; }
  int group_of(int position) const { return block_ > 0 ? position / block_ : node_of_[size_t(position)]; }
  bool uniform() const {
    return block_ > 0 || std::all_of(size_.begin(), size_.end(), [&](int s) { return s == size_[0]; });
  }

 private:
  int block_ = 0;  // > 0: groups of this many consecutive members
  int nodes_ = 0;
  std::vector<int> node_of_, start_, size_;
};

}  // namespace

void tree_schedule(ScheduleBuilder& b, int gpus_per_node, const CommunicatorShape& shape) {
  const std::vector<int>& ranks = b.ranks();
  const int p = b.call.position, C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  const CollectiveOp kind = b.call.kind;
  // Groups of members by node, in communicator order; a chain inside each node and the
  // in-order binary tree (tree 0) or its complement (tree 1: double_binary_tree) over the nodes.
  const NodeRuns runs(ranks, gpus_per_node, shape);
  const int nodes = runs.nodes();
  const bool rooted = kind == CollectiveOp::Broadcast || kind == CollectiveOp::Reduce;
  const bool uniform = runs.uniform();
  // Channel groups, each with its own chain head: one per member of a node (at most one per
  // channel) where the nodes have the same number of members; rooted calls keep one chain from
  // the root.
  const int groups = nodes > 1 && uniform && !rooted ? std::max(1, std::min(C, runs.size(0))) : 1;
  const int trees = rooted ? 1 : 2;
  for (int r = 0; r < groups; ++r) {
    const uint64_t group_bytes = groups == 1 ? bytes : ceil_div(bytes, uint64_t(groups));
    const int group_channels = groups == 1 ? C : (C - r + groups - 1) / groups;
    auto transfer = [&](int peer, uint64_t share) {
      Transfer t = b.transfer(ranks[peer], share, group_channels);
      if (groups > 1) {
        t.first_channel = static_cast<uint16_t>(r);
        t.stride = static_cast<uint16_t>(groups);
        t.channels = static_cast<uint16_t>(group_channels);
      }
      return t;
    };
    for (int t = 0; t < trees; ++t) {
      const uint64_t share = trees == 1 ? group_bytes : (t == 0 ? ceil_div(group_bytes, 2) : group_bytes / 2);
      if (share == 0) continue;
      // Chain position inside the node, from the group's head (tree 1 runs the chain the other
      // way).
      auto chain_member = [&](int node, int index) {
        const int size = runs.size(node);
        return runs.start(node) + ((t == 0 ? index : size - 1 - index) + r) % size;
      };
      const int node = runs.group_of(p);
      const int size = runs.size(node);
      const int rotated = (p - runs.start(node) - r % size + size) % size;
      const int index = t == 0 ? rotated : size - 1 - rotated;
      int parent = -1;
      std::vector<int> children;
      if (index > 0) parent = chain_member(node, index - 1);
      if (index + 1 < size) children.push_back(chain_member(node, index + 1));
      if (index == 0) {
        const TreeLinks links = double_binary_tree(nodes, node, t);
        if (links.parent >= 0) parent = chain_member(links.parent, 0);
        for (int c : links.children) children.push_back(chain_member(c, 0));
      }
      const bool up_phase = kind != CollectiveOp::Broadcast;
      const bool down_phase = kind != CollectiveOp::Reduce;
      int up_index = -1;
      if (up_phase) {
        Phase& ph = b.add(-1);
        up_index = b.last();
        if (!children.empty()) ph.after = up_index;
        if (parent >= 0) ph.sends.push_back(transfer(parent, share));
        for (int c : children) ph.receives.push_back(transfer(c, share));
      }
      if (down_phase) {
        Phase& ph = b.add(-1);
        ph.after = parent >= 0 ? b.last() : up_index;
        if (parent >= 0) ph.receives.push_back(transfer(parent, share));
        for (int c : children) ph.sends.push_back(transfer(c, share));
      }
    }
  }
}

std::pair<int, int> tree_across(ScheduleBuilder& b, const std::vector<int>& across, int member, uint64_t shard,
                                int reduced, uint64_t chunk_bytes) {
  const int C = b.call.channels;
  const int count = static_cast<int>(across.size());
  // An edge of the tree carries `half`; a level forwards packet fidelity's chunk of it (flow
  // fidelity's steady state charges each level that chunk's store and forward: the transfer's
  // step chunk).
  auto edge = [&](int m, uint64_t half) { return b.transfer(across[size_t(m)], half, C, chunk_bytes); };
  int done[2] = {-1, -1};
  for (int t = 0; t < 2; ++t) {
    const uint64_t half = t == 0 ? ceil_div(shard, 2) : shard / 2;
    if (half == 0) continue;
    const TreeLinks links = double_binary_tree(count, member, t);
    // Up: a leaf sends its half once the reduction inside the node has it; an inner member
    // forwards chunk j once its children's chunk j (and its own) are in.
    const int up = b.last() + 1;
    Phase& u = b.add(links.children.empty() ? reduced : up);
    if (!links.children.empty()) u.also_after = reduced;
    if (links.parent >= 0) u.sends.push_back(edge(links.parent, half));
    for (int c : links.children) u.receives.push_back(edge(c, half));
    // Down: the root sends the sum as it completes; the others forward what their parent sends.
    const int down = b.last() + 1;
    Phase& d = b.add(links.parent >= 0 ? down : up);
    if (links.parent < 0) d.also_after = reduced;
    if (links.parent >= 0) d.receives.push_back(edge(links.parent, half));
    for (int c : links.children) d.sends.push_back(edge(c, half));
    done[t] = links.parent >= 0 ? down : up;
  }
  return {done[0], done[1]};
}

}  // namespace tessera::models
