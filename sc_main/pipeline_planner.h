// The pipeline planner's arithmetic (docs/planning.md): stage times from per-layer costs, a
// partition of the layers that minimizes the slowest stage (PipeDream's planner, Narayanan et
// al., SOSP 2019, with the transfers to the neighbouring stages in each stage's time), and the
// placements of pipeline stages on GPUs that the rank orders give, scored on the platform's
// routes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "platforms/routing.h"
#include "workloads/strategy.h"

namespace tessera::app {

// Seconds per iteration of every unit, measured on the rank that runs it.
struct UnitCosts {
  std::vector<double> layer;  // per transformer layer
  double embedding = 0;       // on the first stage
  double output = 0;          // the logits and loss, on the last stage
};

// Layers per stage (each at least one) minimizing the slowest stage's time: its layers, the
// embedding (stage 0), the output (last stage) and boundary[k] for the transfers between stage k
// and k + 1 (charged to both). Ties go to the partition closest to even.
std::vector<int64_t> partition_layers(const UnitCosts& costs, int stages, const std::vector<double>& boundary);
// The slowest stage's time under a partition.
double slowest_stage(const UnitCosts& costs, const std::vector<int64_t>& layers, const std::vector<double>& boundary);

// A stage's layers over `chunks` interleaved model chunks, as stage-layers lists them (chunk
// major: virtual stage c * stages + k), each stage's share split as evenly as it goes.
std::vector<int64_t> interleave(const std::vector<int64_t>& layers, int chunks);

// One placement of the ranks on GPUs: a rank order (TP fastest) and what it costs.
struct Placement {
  std::array<workloads::Axis, 5> order{};
  std::vector<double> boundary;  // seconds per iteration between stage k and k + 1 (slowest replica)
  double data_parallel_s = 0;    // a ring all-reduce of one stage's gradients, slowest group
};

// The distinct placements the rank orders with TP fastest give, with their transfer costs:
// `activation_bytes` per micro-batch each way between stages (`micro_batches` of them), and
// `gradient_bytes` per stage reduced over data parallelism.
std::vector<Placement> placements(const workloads::ResolvedStrategy& r, const platforms::RoutedTopology& topology,
                                  double activation_bytes, int64_t micro_batches, double gradient_bytes);

std::string rank_order_text(const std::array<workloads::Axis, 5>& order);

}  // namespace tessera::app
