#include "models/collectives/schedule.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace tessera::models {

namespace {

// The outermost dimension of an all-reduce across nodes as NCCL's NVLS-tree runs it: a double
// binary tree over the dimension's members at this rank's inner coordinate (`member` of
// `count`, `stride` positions apart), each tree carrying half of this rank's shard, reduced up
// and broadcast down chunk by chunk. `reduced`: the last phase of the reduce-scatter inside
// (-1: none). Returns the phases whose receives complete each tree's half: its down phase, or
// the root's up phase.
std::pair<int, int> tree_across(ScheduleBuilder& b, int member, int count, int stride, uint64_t shard,
                                int reduced) {
  const int p = b.call.position, C = b.call.channels;
  // An edge of the tree carries `half`; a level forwards packet fidelity's chunk of it (flow
  // fidelity's steady state charges each level that chunk's store and forward: the transfer's
  // step chunk).
  auto edge = [&](int m, uint64_t half) { return b.transfer(b.ranks()[size_t(p + (m - member) * stride)], half, C); };
  int done[2] = {-1, -1};
  for (int t = 0; t < 2; ++t) {
    const uint64_t half = t == 0 ? ceil_div(shard, 2) : shard / 2;
    if (half == 0) continue;
    const TreeLinks links = double_binary_tree(count, member, t);
    // Up: a leaf sends its half once the reduce-scatter inside has it; an inner member forwards
    // chunk j once its children's chunk j (and its own) are in.
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

}  // namespace

// Hierarchical: a ring in each dimension of the communicator (innermost first) for the reduce
// part, and back out for the gather part. An all-reduce whose outermost dimension crosses
// nodes runs NCCL's NVLS-tree there (Tuner::tree_across_nodes): a double binary tree across
// the nodes on the shards the dimensions inside left, 2 log2 N network steps where a ring
// takes 2 (N - 1).
void hierarchical_schedule(ScheduleBuilder& b, const CommunicatorShape& shape) {
  const std::vector<int>& ranks = b.ranks();
  const int p = b.call.position, C = b.call.channels;
  const uint64_t bytes = b.call.bytes;
  const bool reduce_part = b.call.reduce_part, gather_part = b.call.gather_part;
  // Coordinates of position p in the dimensions (innermost first); a ring in each.
  const std::vector<int>& dims = shape.dimensions;
  std::vector<int> stride(dims.size(), 1);
  for (size_t d = 1; d < dims.size(); ++d) stride[d] = stride[d - 1] * dims[d - 1];
  std::vector<uint64_t> data(dims.size() + 1, bytes);
  for (size_t d = 0; d < dims.size(); ++d) data[d + 1] = ceil_div(data[d], dims[d]);
  const bool tree = Tuner::tree_across_nodes(b.call.kind, shape);
  const size_t rings = tree ? dims.size() - 1 : dims.size();  // dimensions that run a ring
  int after = -1, also_after = -1;  // the gates of the next ring step
  auto ring_steps = [&](size_t d) {
    const int m = dims[d];
    const int coordinate = (p / stride[d]) % m;
    const int next = p + (((coordinate + 1) % m) - coordinate) * stride[d];
    const int prev = p + (((coordinate + m - 1) % m) - coordinate) * stride[d];
    for (int s = 0; s < m - 1; ++s) {
      Phase& ph = b.add(after);
      ph.also_after = also_after;
      ph.sends.push_back(b.transfer(ranks[next], data[d + 1], C));
      ph.receives.push_back(b.transfer(ranks[prev], data[d + 1], C));
      after = b.last(), also_after = -1;
    }
  };
  if (reduce_part)
    for (size_t d = 0; d < rings; ++d) ring_steps(d);
  if (tree) {
    const size_t outer = dims.size() - 1;
    const int member = (p / stride[outer]) % dims[outer];
    std::tie(after, also_after) = tree_across(b, member, dims[outer], stride[outer], data[outer], after);
  }
  if (gather_part)
    for (size_t d = rings; d-- > 0;) ring_steps(d);
}

}  // namespace tessera::models
