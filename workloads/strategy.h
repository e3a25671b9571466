// How a model is parallelized: Megatron-LM's knobs, one struct.
//
// Strategies come from three places, applied in this order: the model file's "strategy:"
// section, a strategy YAML file, command-line flags. All three go through
// set_strategy_option(key, value), whose keys are the flag names (docs/workloads.md lists them).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/model.h"
#include "workloads/program.h"

namespace tessera::workloads {

struct Framework;

enum class Schedule : uint8_t { GPipe, OneFOneB, Interleaved };
enum class Recompute : uint8_t { None, Selective, Full };
// Parallel dimensions, for the rank order. EP splits the data-parallel dimension (as in
// Megatron: expert layers see dp/ep expert-data-parallel replicas of ep expert shards).
enum class Axis : uint8_t { TP, CP, EP, DP, PP };

const char* to_string(Schedule s);
const char* to_string(Recompute r);
const char* to_string(Axis a);

struct Strategy {
  int dp = 0;  // 0: whatever the GPU count leaves (gpus / (tp * pp * cp)), 1 without a count
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;
  bool sequence_parallel = false;
  int zero = 0;  // 0 none, 1 optimizer states, 2 + gradients, 3 + parameters (FSDP-like)
  int64_t micro_batch = 1;
  int64_t global_batch = 0;  // 0: dp * micro_batch (one micro-batch per replica)
  Schedule schedule = Schedule::OneFOneB;
  int vpp = 1;  // model chunks per pipeline stage (interleaved schedule)
  Recompute recompute = Recompute::None;
  bool flash_attention = true;  // fused attention core (no s^2 activations)
  bool overlap_grad_reduce = true;   // gradient buckets reduced during backward
  double bucket_mb = 25.0;           // gradient bucket size, MiB
  bool overlap_param_gather = true;  // ZeRO parameter all-gathers overlap the forward
  bool tp_comm_overlap = false;      // TP collectives split in chunks overlapping their GEMMs
  int tp_comm_chunks = 4;
  // Rank order, fastest-varying first (Megatron's default tp-cp-ep-dp-pp).
  std::array<Axis, 5> rank_order = {Axis::TP, Axis::CP, Axis::EP, Axis::DP, Axis::PP};
  DType dtype = DType::BF16;       // compute, parameter and activation dtype
  DType grad_dtype = DType::FP32;  // gradient buffer and its reduction (Megatron's main_grad)
  // Strategy tree: layers per virtual pipeline stage (pp * vpp entries, in pipeline order);
  // empty: even, after first/last_stage_layers are taken out.
  std::vector<int64_t> stage_layers;
  // Forwards a pipeline stage runs ahead beyond its schedule's warm-up (1F1B, interleaved), one
  // entry per stage, never increasing from a stage to the next (so no stage waits on a backward
  // that cannot come); empty: none. More micro-batches in flight hide slow stage-to-stage
  // transfers at the cost of their activations (tessera plan, docs/planning.md).
  std::vector<int64_t> extra_warmup;
  int64_t first_stage_layers = 0;  // 0: even share
  int64_t last_stage_layers = 0;   // 0: even share
  // Strategy tree: tensor-parallel size of the vocabulary-parallel part (input embedding,
  // logits, loss), "embedding: {tp: N}" in YAML, --embedding-tp on the command line. It divides
  // tp: each TP group runs that part as tp / embedding_tp groups of embedding_tp ranks, each
  // group on its own slice of the tokens (docs/workloads.md). 0: tp.
  int embedding_tp = 0;
};

// Sets one strategy option by flag name ("tp", "sequence-parallel", "schedule", ...) or by its
// strategy-tree path ("embedding.tp", the flattened YAML "embedding: {tp: 2}"). Switches
// accept "", "true", "false", "1", "0". Throws InputError naming the option and value.
void set_strategy_option(Strategy& strategy, const std::string& key, const std::string& value);
// The options set_strategy_option accepts, with help texts (for the command line's --help).
const std::vector<OptionInfo>& strategy_options();
// The defaults plus the model file's strategy section.
// The framework's defaults (workloads/framework.h), when given, come before the model file's.
Strategy default_strategy(const ModelSpec& model, const Framework* framework = nullptr);
// Applies a strategy YAML file (same keys; nested maps for the tree, lists for stage-layers).
void apply_strategy_file(Strategy& strategy, const std::string& path);

// A strategy checked against a model and a GPU count, with everything derived from it.
struct ResolvedStrategy {
  Strategy s;
  int world = 0;            // GPUs
  int edp = 1;              // expert-data-parallel replicas: dp / ep
  int64_t micro_batches = 0;  // per replica per iteration
  int embedding_tp = 1;       // TP of the embedding, logits and loss (divides s.tp)
  int64_t padded_vocab = 0;   // vocab padded to a multiple of 128 * embedding_tp (Megatron)
  int virtual_stages = 1;     // pp * vpp
  std::vector<int64_t> stage_layers;  // per virtual stage
  std::vector<int64_t> stage_first_layer;  // per virtual stage
};

// Checks the strategy; gpus = 0 takes dp * tp * pp * cp. Throws InputError with one line naming
// the values: TP not dividing heads, dp*tp*pp*cp != GPUs, global batch not divisible, vpp not
// dividing the layers per stage, ...
ResolvedStrategy resolve(const ModelSpec& model, const Strategy& strategy, int gpus = 0);

}  // namespace tessera::workloads
