// What a GPU type is, from its public specification, plus the achievable fractions measured by
// micro-benchmarks (GEMM and STREAM) that the roofline uses.
#pragma once

#include <array>
#include <string>

namespace tessera::models {

struct GpuSpec {
  std::string name = "H100-SXM5-80GB";
  // Peak dense tensor throughput in TFLOP/s, indexed by workloads::DType
  // (fp32, tf32, fp16, bf16, fp8).
  std::array<double, 5> peak_tflops{67.0, 494.7, 989.4, 989.4, 1978.9};
  // Fraction of peak that large GEMMs reach (best achievable matmul / peak).
  double compute_efficiency = 0.80;
  double hbm_capacity_gib = 80.0;
  double hbm_bandwidth_gbps = 3350.0;      // GB/s (1e9 bytes/s)
  double hbm_efficiency = 0.89;            // STREAM triad / peak
  double kernel_overhead_us = 3.0;         // launch and tail per kernel
  int sm_count = 132;
  int nvlink_ports = 18;
  double nvlink_port_bandwidth_gbps = 25.0;  // GB/s per port per direction
  // Most bus bandwidth (GB/s) NCCL's LL protocol reaches on one node of these GPUs (NCCL's
  // llMaxBw: Ampere 87.7, Hopper 141); 0: no limit beyond the links.
  double ll_max_bandwidth_gbps = 0;
};

}  // namespace tessera::models
