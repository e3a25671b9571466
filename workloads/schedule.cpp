#include "workloads/schedule.h"

#include <algorithm>

namespace tessera::workloads {
namespace {

// Megatron's interleaved schedule: the k-th forward unit of a stage is chunk (k / stages) % v
// of micro-batch (k / (stages v)) * stages + k % stages; backward units walk the chunks in
// reverse.
PipelineStep interleaved_unit(int64_t k, bool forward, int stages, int chunks) {
  const int64_t group = k % (int64_t(stages) * chunks);
  int chunk = static_cast<int>(group / stages);
  if (!forward) chunk = chunks - 1 - chunk;
  const int64_t mb = (k / (int64_t(stages) * chunks)) * stages + k % stages;
  return PipelineStep{forward, static_cast<int32_t>(mb), chunk};
}

}  // namespace

std::vector<PipelineStep> pipeline_schedule(Schedule schedule, int stages, int stage,
                                            int64_t micro_batches, int chunks, int64_t extra_warmup) {
  std::vector<PipelineStep> steps;
  steps.reserve(2 * micro_batches * chunks);
  if (schedule == Schedule::GPipe) {
    for (int64_t mb = 0; mb < micro_batches; ++mb)
      for (int c = 0; c < chunks; ++c) steps.push_back({true, int32_t(mb), c});
    for (int64_t mb = 0; mb < micro_batches; ++mb)
      for (int c = chunks - 1; c >= 0; --c) steps.push_back({false, int32_t(mb), c});
    return steps;
  }
  const int64_t units = micro_batches * chunks;
  int64_t warmup;
  if (schedule == Schedule::Interleaved) {
    warmup = int64_t(stages - stage - 1) * 2 + int64_t(chunks - 1) * stages;
  } else {
    warmup = stages - stage - 1;
  }
  warmup = std::min(warmup + extra_warmup, units);
  const int64_t steady = units - warmup;
  auto unit = [&](int64_t k, bool forward) {
    if (schedule == Schedule::Interleaved) return interleaved_unit(k, forward, stages, chunks);
    return PipelineStep{forward, static_cast<int32_t>(k), 0};
  };
  int64_t next_forward = 0, next_backward = 0;
  for (int64_t i = 0; i < warmup; ++i) steps.push_back(unit(next_forward++, true));
  for (int64_t i = 0; i < steady; ++i) {
    steps.push_back(unit(next_forward++, true));
    steps.push_back(unit(next_backward++, false));
  }
  while (next_backward < units) steps.push_back(unit(next_backward++, false));
  return steps;
}

int64_t peak_in_flight(const std::vector<PipelineStep>& steps) {
  int64_t held = 0, peak = 0;
  for (const PipelineStep& s : steps) {
    held += s.forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace tessera::workloads
