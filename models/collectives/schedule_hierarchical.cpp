#include "models/collectives/schedule.h"

#include <tuple>
#include <vector>

namespace tessera::models {

// Hierarchical: a ring in each dimension of the communicator (innermost first) for the reduce
// part, and back out for the gather part. An all-reduce whose outermost dimension crosses
// nodes runs a double binary tree there (Tuner::tree_across_nodes), as NCCL's NVLS-tree does
// across nodes: on the shards the dimensions inside left, 2 log2 N network steps where a ring
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
    std::vector<int> across(static_cast<size_t>(dims[outer]));
    for (int m = 0; m < dims[outer]; ++m) across[size_t(m)] = ranks[size_t(p + (m - member) * stride[outer])];
    std::tie(after, also_after) = tree_across(b, across, member, data[outer], after);
  }
  if (gather_part)
    for (size_t d = rings; d-- > 0;) ring_steps(d);
}

}  // namespace tessera::models
