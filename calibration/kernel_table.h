// Measured kernel times, keyed by what the kernel does and its shape: what `tessera calibrate`
// writes from a profiler trace and what `--calibration FILE` gives the compute model, which
// then uses a measured time instead of its own for every kernel with the same key.
//
// The file (docs/calibration.md):
//   gpu: A100-SXM4-80GB              # must name a GPU type tessera knows
//   source: megatron rank0.json.gz   # free text
//   kernels:
//     - {kind: gemm, dtype: fp16, m: 8192, n: 1536, k: 4096, us: 400.1, samples: 40}
//     - {kind: attention_gemm, dtype: fp16, batch: 16, m: 2048, n: 2048, k: 128, us: 181.0, samples: 40}
//     - {kind: softmax, dtype: fp16, elements: 268435456, us: 425.6, samples: 40}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/program.h"

namespace tessera::calibration {

// GEMM kinds (gemm, attention_gemm) match on dtype, batch, m, n and k exactly; other kinds
// match on dtype and element count (the elements of the kernel's main input).
struct KernelKey {
  workloads::KernelKind kind = workloads::KernelKind::Gemm;
  workloads::DType dtype = workloads::DType::FP16;
  int64_t batch = 1, m = 0, n = 0, k = 0;  // GEMM kinds
  int64_t elements = 0;                    // other kinds
  bool operator==(const KernelKey& o) const;
  bool operator<(const KernelKey& o) const;  // by kind, dtype, then shape (the file's order)
  double flops() const;                      // 2 * batch * m * n * k for GEMM kinds, else 0
  std::string shape() const;                 // "m 8192, n 1536, k 4096", "268435456 elements"
};

// gemm and attention_gemm: the kinds keyed by their GEMM shape.
bool is_gemm_kind(workloads::KernelKind kind);

struct MeasuredKernel {
  KernelKey key;
  double seconds = 0;  // mean duration of one kernel (one op: the sum of its kernels)
  int samples = 0;     // how many launches the mean is over
};

class KernelTable {
 public:
  // Reads a calibration file; throws workloads::InputError ("FILE:LINE: key: ...") on a
  // malformed file, an unknown kind or dtype, a non-positive or non-finite time.
  static KernelTable load(const std::string& path);
  void save(const std::string& path) const;

  const std::string& gpu() const { return gpu_; }
  void set_gpu(std::string gpu) { gpu_ = std::move(gpu); }
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

  // Adds a measurement; a key already present is merged (sample-weighted mean).
  void add(const MeasuredKernel& kernel);
  // The measured seconds of a kernel with this key, if any.
  std::optional<double> seconds(const KernelKey& key) const;
  const std::vector<MeasuredKernel>& kernels() const { return kernels_; }
  bool empty() const { return kernels_.empty(); }
  // Orders the kernels by key (kind, dtype, shape), as save() then writes them.
  void sort();

 private:
  std::string gpu_;
  std::string source_;
  std::vector<MeasuredKernel> kernels_;
};

}  // namespace tessera::calibration
