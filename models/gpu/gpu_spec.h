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
  // Highest SM clock (MHz) of the specification; the GPU side of NCCL's protocol latencies runs
  // at it (TunerConfig::reference_clock_mhz); 0: unknown, NCCL's latencies as they are.
  double boost_clock_mhz = 0;
  int nvlink_ports = 18;
  double nvlink_port_bandwidth_gbps = 25.0;  // GB/s per port per direction
  // Most bus bandwidth (GB/s) NCCL's LL protocol reaches on one node of these GPUs (NCCL's
  // llMaxBw: Ampere 87.7, Hopper 141); 0: no limit beyond the links.
  double ll_max_bandwidth_gbps = 0;
  // The same for LL128 (bus bandwidth, GB/s), where measured below what the links allow; 0: no
  // limit beyond the links and LL128's 120 data bytes per 128.
  double ll128_max_bandwidth_gbps = 0;
  // Chunk times each pass of an NCCL ring with the Simple protocol (a reduce-scatter or an
  // all-gather; an all-reduce has two) takes beyond a lossless pipeline over these GPUs'
  // NVLinks, with NCCL's chunk (Tuner::ring_chunk); calibrated from nccl-tests where it shows
  // (Ampere, whose NVLink rings read from their peer: NCCL's P2P read mode); 0: none.
  double ring_fill_chunks = 0;
  // NCCL's Simple rings read from their peer over these GPUs' NVLinks (P2P read, NCCL's default
  // for Ampere: transport/p2p.cc p2pUseRead): a channel waits for each step's flag before it
  // reads the step's data, so the step's latency adds to its data time instead of hiding
  // behind the chunks in flight.
  bool simple_reads_peer = false;
  // Microseconds a channel's SM spends on each slice of a Simple-protocol ring or point-to-point
  // transfer without moving data: it fences the slice's stores and posts the slice's flag before
  // it takes the next (NCCL prims_simple.h), so at mid sizes, where slices are small, the
  // channels run well below the links; calibrated from nccl-tests where it shows (Hopper's
  // all_gather); 0: none.
  double simple_handshake_us = 0;
  // Payload GB/s one channel (one SM) of NCCL's point-to-point kernel moves to a peer in the
  // node: a send or receive runs on NCCL's channels per peer (Tuner::p2p_plan), each at this
  // rate, and the receiver copies the last chunk out after it arrived; measured on nccl-tests
  // sendrecv where the links do not limit it (Hopper); 0: the links alone limit it.
  double p2p_channel_gbps = 0;
};

}  // namespace tessera::models
