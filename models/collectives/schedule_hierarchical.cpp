#include "models/collectives/schedule.h"

#include <algorithm>

namespace tessera::models {


// Hierarchical: a ring in each dimension of the communicator (innermost first) for the reduce
// part, and back out for the gather part.
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
  auto ring_steps = [&](size_t d) {
    const int m = dims[d];
    const int coordinate = (p / stride[d]) % m;
    const int next = p + (((coordinate + 1) % m) - coordinate) * stride[d];
    const int prev = p + (((coordinate + m - 1) % m) - coordinate) * stride[d];
    for (int s = 0; s < m - 1; ++s) {
      Phase& ph = b.add(b.after_last());
      ph.sends.push_back(b.transfer(ranks[next], data[d + 1], C));
      ph.receives.push_back(b.transfer(ranks[prev], data[d + 1], C));
    }
  };
  if (reduce_part)
    for (size_t d = 0; d < dims.size(); ++d) ring_steps(d);
  if (gather_part)
    for (size_t d = dims.size(); d-- > 0;) ring_steps(d);
}

}  // namespace tessera::models
