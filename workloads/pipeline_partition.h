// Pipeline partitioning: layers per stage from per-layer costs, minimizing the slowest stage
// (PipeDream's planner for a straight pipeline, Narayanan et al., SOSP 2019), with the cost of the
// transfers to the neighbouring stages in each stage's time. docs/planning.md.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::workloads {

// Seconds per iteration of every unit, measured on the rank that runs it.
struct UnitCosts {
  std::vector<double> layer;  // per transformer layer
  double embedding = 0;       // on the first stage
  double output = 0;          // the logits and loss, on the last stage
};

// Layers per stage (each at least one) minimizing the slowest stage's time: its layers, the
// embedding (stage 0), the output (last stage) and boundary[k] for the transfers between stage k
// and k + 1 (charged to both). Ties go to the earliest cuts found, the most even partition.
std::vector<int64_t> partition_layers(const UnitCosts& costs, int stages, const std::vector<double>& boundary);
// The slowest stage's time under a partition.
double slowest_stage(const UnitCosts& costs, const std::vector<int64_t>& layers, const std::vector<double>& boundary);

// A stage's layers over `chunks` interleaved model chunks, as stage-layers lists them (chunk
// major: virtual stage c * stages + k), each stage's share split as evenly as it goes.
std::vector<int64_t> interleave(const std::vector<int64_t>& layers, int chunks);

}  // namespace tessera::workloads
