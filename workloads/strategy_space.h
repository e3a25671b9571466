// The space of strategies a search walks: every combination of dp, tp, pp, cp, ep, micro-batch,
// schedule and vpp, recompute, ZeRO stage and sequence parallelism for a model on a GPU count and
// a global batch, each dimension restrictable. Walking it sorts every candidate into redundant
// (the same run as another candidate: sequence parallelism without TP, ZeRO without data
// parallelism, selective recompute with flash attention, which saves no attention scores, and of
// ZeRO 1 and 2, which compile to the same programs, the one needing more memory where both fit),
// invalid (resolve() refuses it; the reason counted with its numbers as N), out of memory
// (estimate_stage_memory(), the figure `tessera run` checks, above the HBM), dominated (it
// recomputes more than a twin, the same strategy but for recompute, that fits: the same work and
// more on the same GPUs and links, so never faster) or kept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/model.h"
#include "workloads/strategy.h"

namespace tessera::workloads {

struct Framework;

// The values each dimension takes; an empty list takes the defaults of default_dimensions().
struct SpaceDimensions {
  std::vector<int> dp, tp, pp, cp, ep, zero;
  std::vector<int64_t> micro_batch;
  std::vector<Schedule> schedule;
  std::vector<int> vpp;  // for the interleaved schedule
  std::vector<Recompute> recompute;
  std::vector<bool> sequence_parallel;
  // Keep candidates that recompute more than a twin that fits (by default set aside as dominated).
  bool keep_dominated = false;
};

// The defaults for a model on `gpus` GPUs, `gpus_per_node` to a node: tp powers of two up to the
// node; pp powers of two up to 32 that divide the layers; cp 1 and 2; ep the powers of two that
// divide the experts (1 for a dense model); micro-batch 1, 2, 4, 8; 1F1B and interleaved with vpp 2
// and 4; every recompute policy and ZeRO stage; sequence parallelism off and on. dp is what the
// GPUs leave. Given lists replace the defaults.
SpaceDimensions complete_dimensions(const SpaceDimensions& given, const ModelSpec& model, int gpus, int gpus_per_node);

struct Candidate {
  Strategy strategy;
  double peak_memory_bytes = 0;  // the largest stage's
};

struct SpaceWalk {
  size_t enumerated = 0;
  size_t redundant = 0;
  size_t excluded = 0;  // a dp the --dp list leaves out
  std::map<std::string, size_t> invalid;  // reason -> count
  std::vector<Candidate> out_of_memory;   // with what they need
  std::vector<Candidate> dominated;       // a twin that recomputes less fits (kept)
  std::vector<Candidate> kept;
  size_t invalid_total() const;
};

// Walks the space from `base` (the framework's and model's defaults), for `global_batch` samples.
SpaceWalk walk_strategy_space(const ModelSpec& model, const Strategy& base, const SpaceDimensions& dims, int gpus,
                              int64_t global_batch, double hbm_bytes);

// The strategy as `tessera run` options (every searched dimension, always given).
std::vector<std::pair<std::string, std::string>> strategy_settings(const Strategy& s);

// A reason with its numbers as N: "tp (N) does not divide heads (N)".
std::string reason_class(const std::string& message);

}  // namespace tessera::workloads
