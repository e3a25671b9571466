#include "sc_main/pipeline_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "platforms/analysis.h"

namespace tessera::app {

using workloads::Axis;

std::string rank_order_text(const std::array<Axis, 5>& order) {
  std::string t;
  for (Axis a : order) t += (t.empty() ? "" : "-") + std::string(workloads::to_string(a));
  return t;
}

namespace {

// Rank of the given coordinates under a rank order.
struct Coordinates {
  std::array<int, 5> size{};
  int rank(const std::array<Axis, 5>& order, const std::array<int, 5>& at) const {
    int r = 0, stride = 1;
    for (Axis a : order) {
      r += at[int(a)] * stride;
      stride *= size[int(a)];
    }
    return r;
  }
};

double bottleneck(const platforms::RoutedTopology& t, int a, int b) {
  if (a == b) return std::numeric_limits<double>::infinity();
  double bw = std::numeric_limits<double>::infinity();
  for (const platforms::Hop& h : platforms::route(t.graph, t.routing, uint32_t(a), uint32_t(b)))
    bw = std::min(bw, h.bandwidth_bytes_per_s);
  return bw;
}

Placement score(const std::array<Axis, 5>& order, const Coordinates& c, const platforms::RoutedTopology& t,
                double activation_bytes, int64_t micro_batches, double gradient_bytes) {
  Placement p;
  p.order = order;
  const int pp = c.size[int(Axis::PP)], dp = c.size[int(Axis::DP)];
  std::array<int, 5> at{};
  p.boundary.assign(size_t(std::max(0, pp - 1)), 0.0);
  // Every replica of the pipeline (dp x tp x cp x ep coordinates; TP ranks send their own share).
  const int replicas = c.size[int(Axis::TP)] * c.size[int(Axis::CP)] * c.size[int(Axis::EP)] * dp;
  for (int rep = 0; rep < replicas; ++rep) {
    int rest = rep;
    for (Axis a : {Axis::TP, Axis::CP, Axis::EP, Axis::DP}) at[int(a)] = rest % c.size[int(a)], rest /= c.size[int(a)];
    for (int k = 0; k + 1 < pp; ++k) {
      at[int(Axis::PP)] = k;
      const int from = c.rank(order, at);
      at[int(Axis::PP)] = k + 1;
      const int to = c.rank(order, at);
      // Activations forward and their gradients back, every micro-batch.
      const double s = 2.0 * double(micro_batches) * activation_bytes / std::min(bottleneck(t, from, to), bottleneck(t, to, from));
      p.boundary[size_t(k)] = std::max(p.boundary[size_t(k)], s);
    }
  }
  if (dp > 1) {
    at = {};
    double slowest = std::numeric_limits<double>::infinity();
    for (int d = 0; d < dp; ++d) {
      at[int(Axis::DP)] = d;
      const int from = c.rank(order, at);
      at[int(Axis::DP)] = (d + 1) % dp;
      slowest = std::min(slowest, bottleneck(t, from, c.rank(order, at)));
    }
    p.data_parallel_s = 2.0 * (dp - 1) / dp * gradient_bytes / slowest;
  }
  return p;
}

}  // namespace

std::vector<Placement> placements(const workloads::ResolvedStrategy& r, const platforms::RoutedTopology& t,
                                  double activation_bytes, int64_t micro_batches, double gradient_bytes) {
  Coordinates c;
  c.size[int(Axis::TP)] = r.s.tp;
  c.size[int(Axis::CP)] = r.s.cp;
  c.size[int(Axis::EP)] = r.s.ep;
  c.size[int(Axis::DP)] = r.edp;
  c.size[int(Axis::PP)] = r.s.pp;
  std::array<Axis, 4> rest = {Axis::CP, Axis::EP, Axis::DP, Axis::PP};
  std::vector<Placement> out;
  std::map<std::vector<int>, bool> seen;  // GPU of each (stage, replica): one placement per layout
  do {
    const std::array<Axis, 5> order = {Axis::TP, rest[0], rest[1], rest[2], rest[3]};
    std::vector<int> layout;
    for (int rank = 0; rank < c.size[0] * c.size[1] * c.size[2] * c.size[3] * c.size[4]; ++rank) {
      std::array<int, 5> at{};
      int x = rank;
      for (Axis a : order) at[int(a)] = x % c.size[int(a)], x /= c.size[int(a)];
      layout.push_back(c.rank({Axis::TP, Axis::CP, Axis::EP, Axis::DP, Axis::PP}, at));
    }
    if (seen.emplace(layout, true).second) out.push_back(score(order, c, t, activation_bytes, micro_batches, gradient_bytes));
  } while (std::next_permutation(rest.begin(), rest.end()));
  return out;
}

}  // namespace tessera::app
