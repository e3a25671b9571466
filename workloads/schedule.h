// Pipeline schedules: the order in which one pipeline stage runs forward and backward passes of
// its micro-batches (and, interleaved, of its model chunks).
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/strategy.h"

namespace tessera::workloads {

struct PipelineStep {
  bool forward = true;
  int32_t micro_batch = 0;
  int32_t chunk = 0;  // model chunk of this stage (0 unless interleaved)
};

// The steps of stage `stage` of `stages`, for `micro_batches` micro-batches and `chunks` model
// chunks per stage:
//  - GPipe: every forward, then every backward (all micro-batches in flight at once);
//  - 1F1B (PipeDream-Flush): stages-stage-1 warm-up forwards, then one forward one backward,
//    then the cool-down backwards;
//  - interleaved 1F1B (Megatron-LM): as 1F1B over micro-batch x chunk units, groups of `stages`
//    micro-batches per chunk; needs micro_batches % stages == 0.
// extra_warmup: forwards beyond the warm-up (1F1B and interleaved), at most every unit.
std::vector<PipelineStep> pipeline_schedule(Schedule schedule, int stages, int stage,
                                            int64_t micro_batches, int chunks, int64_t extra_warmup = 0);

// The most (micro-batch, chunk) units whose activations a stage holds at once under the
// schedule; 1F1B's first stage holds `stages` of them, GPipe's every micro-batch.
int64_t peak_in_flight(const std::vector<PipelineStep>& steps);

}  // namespace tessera::workloads
