// The workload compiler: a model and a strategy become one program per rank (workloads::Job).
//
// Ranks that run the same op sequence share one Program (all TP, CP and DP ranks of a pipeline
// stage do), and name their communicators and pipeline peers through slots, so 1,024 GPUs
// compile to pp programs. Accounting (FLOPs, per-rank memory) comes with the job.
// docs/workloads.md gives the op decomposition and the formulas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/framework.h"
#include "workloads/model.h"
#include "workloads/program.h"
#include "workloads/strategy.h"

namespace tessera::workloads {

// Bytes one rank holds. peak = params + grads + optimizer + activations + temporary.
struct MemoryBreakdown {
  double params = 0;       // weights in the compute dtype (sharded by ZeRO-3)
  double grads = 0;        // gradient buffer in grad-dtype (sharded by ZeRO-2/3)
  double optimizer = 0;    // Adam: fp32 master weights and two moments (sharded by ZeRO-1+)
  double activations = 0;  // saved for backward, at the schedule's peak of micro-batches in flight
  double temporary = 0;    // working buffers: one layer's full activations under full recompute,
                           // gathered ZeRO-3 parameters, TP gather buffers, gradient buckets
  double peak = 0;
};

// Communicator slots of every rank (Rank::communicators[slot]); -1 where the job has none.
// Slot 0 is always the data-parallel group (dp x cp ranks that hold the same dense weights).
struct CommunicatorSlots {
  int dp = 0;
  int tp = -1;
  int cp = -1;
  int ep = -1;
  int edp = -1;        // expert-data-parallel: ranks holding the same experts
  int embedding = -1;  // first and last pipeline stage, for tied embedding gradients
  // The vocabulary-parallel part (embedding, logits, loss) with embedding.tp = e < tp = t:
  // groups of e consecutive TP ranks (-1 when e = 1; the tp slot when e = t) and the t / e
  // ranks of a TP group holding the same vocabulary shard (-1 when e = t). First and last
  // stage only.
  int embedding_tp = -1;
  int embedding_replica = -1;
};
// Peer slots (Rank::peers[slot]) of pipeline ranks.
constexpr int kPrevStagePeer = 0;
constexpr int kNextStagePeer = 1;

struct CompiledJob {
  Job job;
  ResolvedStrategy strategy;
  CommunicatorSlots slots;
  std::vector<int> stage_of_rank;        // pipeline stage of each rank
  std::vector<MemoryBreakdown> memory;   // per rank
  std::vector<int64_t> peak_in_flight;   // per pipeline stage: (micro-batch, chunk) units held
};

// Compiles. gpus = 0: dp * tp * pp * cp. The framework decides which kernels are fused and
// what per-iteration work it adds. The pipeline stages' programs are built on `threads`
// threads (0: one per core); the job is the same on any number. Throws InputError on an
// impossible strategy.
CompiledJob compile(const ModelSpec& model, const Strategy& strategy, int gpus = 0,
                    const Framework& framework = Framework{}, int threads = 0);

// The memory one rank of each pipeline stage needs, as compile() counts it (the same code),
// without building the programs: for searches that check thousands of strategies. Throws
// InputError on an impossible strategy, as compile() does.
std::vector<MemoryBreakdown> estimate_stage_memory(const ModelSpec& model, const Strategy& strategy, int gpus);

// Throws OutOfMemoryError "out of memory on rank R: needs X GiB, has Y GiB" for the first rank
// whose peak exceeds hbm_bytes.
void check_memory(const CompiledJob& compiled, double hbm_bytes);

// Activation bytes one transformer layer saves for backward, per micro-batch, on one rank,
// under the strategy's TP/SP/CP and recompute policy (Korthikanti et al. 2022, Table 2 with
// unfused attention). moe: the layer's MLP is a mixture of experts.
double layer_activation_bytes(const ModelSpec& model, const ResolvedStrategy& strategy,
                              bool moe = false);

// Report figures from a simulated iteration time.
struct Throughput {
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;  // model FLOPs / (GPUs * peak FLOP/s * time)
};
Throughput throughput(const IterationInfo& info, int gpus, double iteration_seconds,
                      double peak_flops_per_gpu);

// Sums the matmul FLOPs of all ranks' programs (model: without recompute ops; hardware: with).
struct FlopCount {
  double model = 0;
  double hardware = 0;
};
FlopCount count_flops(const Job& job);

}  // namespace tessera::workloads
