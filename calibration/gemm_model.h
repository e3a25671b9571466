// GEMM time from the shape, as cuBLAS runs it (docs/compute-model.md):
//
//   The output is cut into tiles of Tm x Tn; each SM computes one tile at a time, so the kernel
//   runs ceil(tiles / SMs) waves (wave quantization), and m, n that are not multiples of the
//   tile pay for the whole edge tile (tile quantization). A tile's main loop streams
//   (Tm + Tn) k operands through L2 while it does 2 Tm Tn k FLOPs, so it runs at the slower of
//   the SM's tensor rate (times the main-loop efficiency) and its share of L2 bandwidth, plus a
//   fixed cost per tile (prologue and epilogue). The library picks the tile that finishes
//   first. Compute and HBM traffic (A, B and C once) overlap imperfectly: their times combine as
//   (tc^p + tm^p)^(1/p), so skinny and small-k shapes fall to the memory roofline. Operands not
//   aligned to 16 bytes run slower kernels. A launch cost is added per kernel.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::calibration {

struct GemmParameters {
  std::vector<std::pair<int, int>> tiles;  // candidate output tiles (Tm, Tn)
  double mainloop_efficiency = 0.84;       // of the SM's peak tensor rate in a tile's main loop
  double l2_bandwidth = 0;                 // bytes/s, all SMs together
  double tile_overhead_s = 0;              // per tile: prologue and epilogue
  double overlap_exponent = 2;             // p of the compute/memory combination
  double unaligned_efficiency = 1;         // main-loop factor when m, n or k is not 16-byte aligned
  double launch_s = 0;                     // per kernel
};

struct GemmShapeFacts {
  int tile_m = 0, tile_n = 0;
  int64_t tiles = 0, waves = 0;
  double compute_s = 0, memory_s = 0, total_s = 0;
};

class GemmModel {
 public:
  // peak_flops: the dtype's dense tensor peak of the GPU; hbm_bandwidth: achievable (STREAM).
  GemmModel(GemmParameters parameters, int sm_count, double hbm_bandwidth);

  // batch independent m x n x k products of `element_bytes`-byte operands at `peak_flops`.
  GemmShapeFacts time(int64_t batch, int64_t m, int64_t n, int64_t k, double element_bytes,
                      double peak_flops) const;
  // time(...).total_s, remembered per shape: a program runs the same few shapes on every rank
  // and layer, and the model's search over tiles is most of a kernel's cost to the simulator.
  double seconds(int64_t batch, int64_t m, int64_t n, int64_t k, double element_bytes,
                 double peak_flops) const;
  const GemmParameters& parameters() const { return p_; }
  // Whether cuBLAS's 16-byte vector loads find every operand row aligned: the rows are k (A and
  // B) and n (C) elements long; m only counts rows.
  static bool rows_aligned(int64_t n, int64_t k, double element_bytes);

 private:
  struct Shape {
    int64_t batch, m, n, k;
    double element_bytes, peak_flops;
    bool operator==(const Shape& o) const {
      return batch == o.batch && m == o.m && n == o.n && k == o.k && element_bytes == o.element_bytes &&
             peak_flops == o.peak_flops;
    }
  };
  struct ShapeHash {
    size_t operator()(const Shape& s) const;
  };
  // The remembered shapes' lock: the analytic model costs programs on several threads. (A copy
  // of the model gets a lock of its own.)
  struct Lock {
    std::mutex mutex;
    Lock() = default;
    Lock(const Lock&) {}
    Lock& operator=(const Lock&) { return *this; }
  };
  GemmParameters p_;
  int sms_;
  double hbm_;
  mutable std::unordered_map<Shape, double, ShapeHash> seconds_;
  mutable Lock lock_;
};

}  // namespace tessera::calibration
