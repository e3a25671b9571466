#include "workloads/pipeline_partition.h"

#include <algorithm>
#include <limits>

namespace tessera::workloads {

namespace {

// The time of stage k holding layers [first, first + count).
double stage_time(const UnitCosts& c, int k, int stages, int64_t first, int64_t count, const std::vector<double>& b) {
  double t = 0;
  for (int64_t l = first; l < first + count; ++l) t += c.layer[size_t(l)];
  if (k == 0) t += c.embedding;
  if (k == stages - 1) t += c.output;
  if (k > 0) t += b[size_t(k - 1)];
  if (k < stages - 1) t += b[size_t(k)];
  return t;
}

}  // namespace

double slowest_stage(const UnitCosts& c, const std::vector<int64_t>& layers, const std::vector<double>& b) {
  double worst = 0;
  int64_t first = 0;
  const int stages = static_cast<int>(layers.size());
  for (int k = 0; k < stages; ++k) {
    worst = std::max(worst, stage_time(c, k, stages, first, layers[size_t(k)], b));
    first += layers[size_t(k)];
  }
  return worst;
}

std::vector<int64_t> partition_layers(const UnitCosts& c, int stages, const std::vector<double>& b) {
  const int64_t L = static_cast<int64_t>(c.layer.size());
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][n]: the slowest of stages 0..k holding the first n layers; cut[k][n]: stage k's first layer.
  std::vector<std::vector<double>> best(size_t(stages), std::vector<double>(size_t(L + 1), inf));
  std::vector<std::vector<int64_t>> cut(size_t(stages), std::vector<int64_t>(size_t(L + 1), 0));
  for (int64_t n = 1; n <= L; ++n) best[0][size_t(n)] = stage_time(c, 0, stages, 0, n, b);
  for (int k = 1; k < stages; ++k)
    for (int64_t n = k + 1; n <= L; ++n)
      for (int64_t first = k; first < n; ++first) {
        const double t = std::max(best[size_t(k - 1)][size_t(first)], stage_time(c, k, stages, first, n - first, b));
        // Strictly better by a part in 1e9: ties keep the earlier (more even) cut.
        if (t < best[size_t(k)][size_t(n)] * (1 - 1e-9)) best[size_t(k)][size_t(n)] = t, cut[size_t(k)][size_t(n)] = first;
      }
  std::vector<int64_t> layers(static_cast<size_t>(stages), 0);
  int64_t n = L;
  for (int k = stages - 1; k > 0; --k) {
    layers[size_t(k)] = n - cut[size_t(k)][size_t(n)];
    n = cut[size_t(k)][size_t(n)];
  }
  layers[0] = n;
  return layers;
}

std::vector<int64_t> interleave(const std::vector<int64_t>& layers, int chunks) {
  const size_t stages = layers.size();
  std::vector<int64_t> out(stages * size_t(chunks));
  for (size_t k = 0; k < stages; ++k)
    for (int c = 0; c < chunks; ++c)
      out[size_t(c) * stages + k] = layers[k] / chunks + (c < layers[k] % chunks ? 1 : 0);
  return out;
}

}  // namespace tessera::workloads
