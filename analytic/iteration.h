// Analytic fidelity (docs/analytic.md): one training iteration costed without simulating the
// fabric. Every rank's program is walked op by op in time order: an op is ready when its
// stream predecessor and its dependencies are done; compute ops run one at a time on the
// rank's compute engine (at the share of SMs the running collectives leave, re-timed when it
// changes, as the simulated engine does), copies on its copy engine; a collective ends its
// tuner-predicted time after its last member joined; a Send ends when its last byte is sent,
// the matching Recv a path latency later. Communication is not contended. Equivalent ranks
// (rank_classes.h) are costed once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analytic/op_costs.h"
#include "models/gpu/activity.h"
#include "models/gpu/time_causes.h"

namespace tessera::analytic {

struct AnalyticOptions {
  CostOptions costs;
  bool trace = false;          // keep every op's span
  bool critical_path = false;  // keep the chain of ops that sets the iteration time
  // Kernels that run back to back walked as one run (the same costs, fewer steps); off: kernel
  // by kernel (tests compare the two).
  bool kernel_runs = true;
};

// One op of the critical path: it ran from the end of the op before it on the path (0 for the
// first) to `end_s`; for a collective, from its last member's join; for a receive that waited
// for its data, from the send's start.
struct PathSegment {
  int rank = 0;  // a representative rank of the class that ran it
  uint32_t op = 0;
  double start_s = 0, end_s = 0;
};

// One rank's iteration, in the fields the simulation reports (sc_main/simulation.h).
struct RankCost {
  int rank = 0;
  double finish_s = 0;
  double compute_s = 0;
  double exposed_communication_s = 0;
  double overlapped_communication_s = 0;
  double idle_s = 0;
  std::array<double, models::kComputeCauses> compute_by_cause{};
  std::array<double, models::kTimeCauses> time_by_cause{};  // adds up to the iteration time
  std::vector<models::CauseSpan> cause_spans;  // when tracing
  uint64_t ops = 0;
  double bytes_sent = 0;
  double bytes_received = 0;
  std::vector<models::OpSpan> spans;  // when tracing
};

struct AnalyticResult {
  double iteration_time_s = 0;
  std::vector<RankCost> ranks;  // every rank of the job
  int classes = 0;              // ranks costed (one per class of equivalent ranks)
  uint64_t steps = 0;           // events and kernel runs the walk went through
  std::vector<PathSegment> critical_path;  // first to last, when asked for
  bool deadlocked = false;
  std::string deadlock;         // the stuck ranks and ops
};

AnalyticResult cost_iteration(const platforms::PlatformConfig& platform,
                              const platforms::RoutedTopology& topology, const workloads::Job& job,
                              const AnalyticOptions& options);

}  // namespace tessera::analytic
