#include "calibration/gemm_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::calibration {

GemmModel::GemmModel(GemmParameters parameters, int sm_count, double hbm_bandwidth)
    : p_(std::move(parameters)), sms_(std::max(1, sm_count)), hbm_(hbm_bandwidth) {}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

bool GemmModel::rows_aligned(int64_t n, int64_t k, double eb) {
  // Rows must start on 16-byte boundaries. An odd m is no matter (H100: 4095 x 4096 x 4096 runs
  // at the aligned rate, 4096 x 4095 x 4096 and 4096 x 4096 x 4095 on slow fallback kernels;
  // calibration/data/measured/H100-SXM5-80GB/kernels.csv).
  const auto row = [eb](int64_t elements) { return double(elements) * eb / 16 == std::floor(double(elements) * eb / 16); };
  return row(n) && row(k);
}

GemmShapeFacts GemmModel::time(int64_t batch, int64_t m, int64_t n, int64_t k, double eb,
                               double peak_flops) const {
  GemmShapeFacts best;
  best.compute_s = std::numeric_limits<double>::infinity();
  const double efficiency = p_.mainloop_efficiency * (rows_aligned(n, k, eb) ? 1.0 : p_.unaligned_efficiency);
  const double sm_flops = peak_flops / sms_ * efficiency;
  const double sm_l2 = p_.l2_bandwidth > 0 ? p_.l2_bandwidth / sms_ : 0;
  for (const auto& [tm, tn] : p_.tiles) {
    const int64_t tiles = batch * ceil_div(m, tm) * ceil_div(n, tn);
    const int64_t waves = ceil_div(tiles, sms_);
    double tile_s = 2.0 * tm * tn * double(k) / sm_flops;
    if (sm_l2 > 0) tile_s = std::max(tile_s, double(tm + tn) * double(k) * eb / sm_l2);
    const double compute = double(waves) * (tile_s + p_.tile_overhead_s);
    if (compute < best.compute_s) {
      best.compute_s = compute;
      best.tile_m = tm;
      best.tile_n = tn;
      best.tiles = tiles;
      best.waves = waves;
    }
  }
  best.memory_s = double(batch) * (double(m) * k + double(k) * n + double(m) * n) * eb / hbm_;
  const double p = p_.overlap_exponent;
  best.total_s = std::pow(std::pow(best.compute_s, p) + std::pow(best.memory_s, p), 1.0 / p) +
                 p_.launch_s;
  return best;
}

size_t GemmModel::ShapeHash::operator()(const Shape& s) const {
  size_t h = std::hash<int64_t>()(s.batch);
  for (int64_t v : {s.m, s.n, s.k}) h = h * 1000003u ^ std::hash<int64_t>()(v);
  h = h * 1000003u ^ std::hash<double>()(s.element_bytes);
  return h * 1000003u ^ std::hash<double>()(s.peak_flops);
}

double GemmModel::seconds(int64_t batch, int64_t m, int64_t n, int64_t k, double element_bytes,
                          double peak_flops) const {
  const Shape shape{batch, m, n, k, element_bytes, peak_flops};
  {
    const std::lock_guard<std::mutex> hold(lock_.mutex);
    const auto it = seconds_.find(shape);
    if (it != seconds_.end()) return it->second;
  }
  const double s = time(batch, m, n, k, element_bytes, peak_flops).total_s;
  const std::lock_guard<std::mutex> hold(lock_.mutex);
  seconds_.emplace(shape, s);
  return s;
}

}  // namespace tessera::calibration
