// The pipeline planner's placements (docs/planning.md): the layouts of pipeline stages on GPUs
// that the rank orders give, scored on the platform's routes. The partition itself is
// workloads/pipeline_partition.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "platforms/routing.h"
#include "workloads/pipeline_partition.h"
#include "workloads/strategy.h"

namespace tessera::app {

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
