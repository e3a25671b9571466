// The first workload: data-parallel training of a GPT-style decoder (embedding, transformer
// layers, logits and loss) with gradient all-reduce in buckets that overlaps the backward pass,
// the way PyTorch DDP and Megatron's overlapped gradient reduce do it.
#pragma once

#include <cstdint>

#include "workloads/program.h"

namespace tessera::workloads {

struct GptConfig {
  int64_t layers = 24;
  int64_t hidden = 2048;
  int64_t heads = 16;
  int64_t ffn_hidden = 0;     // 0: 4 * hidden
  int64_t seq_length = 2048;
  int64_t vocab = 51200;
  DType dtype = DType::BF16;
};

struct DataParallelConfig {
  int dp = 8;                 // data-parallel ranks (= GPUs)
  int64_t micro_batch = 4;    // samples per micro-batch per rank
  int64_t global_batch = 32;  // samples per iteration, all ranks together
  double bucket_mb = 25.0;    // gradient bucket size in MiB (DDP's default is 25)
  DType grad_dtype = DType::FP32;  // dtype of the gradient all-reduce
};

// Parameters of one transformer layer (attention + MLP + two norms).
int64_t layer_parameters(const GptConfig& model);
// Parameters of the whole model (embedding tied with the logits layer).
int64_t model_parameters(const GptConfig& model);
// Model FLOPs of one iteration (forward + backward, no recompute): Megatron's
// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) for the standard 4h MLP.
double iteration_model_flops(const GptConfig& model, int64_t global_batch);

// Builds the job. Throws std::invalid_argument naming the values when the strategy is
// impossible (batch not divisible, zero sizes).
Job build_data_parallel_gpt(const GptConfig& model, const DataParallelConfig& strategy);

}  // namespace tessera::workloads
