// The symbolic form of the analytic iteration time (tessera analyze --symbolic, docs/analytic.md):
// the iteration time is the length of the critical path of the walk (iteration.h), the chain of
// ops each of which waited for the end of the one before. Grouping its ops by cause and by the
// hardware rate that bounds them gives
//
//     T = sum over terms  W / (eta * X)
//
// with W the work of the term's ops on the path (FLOPs, bytes), X a named hardware parameter
// (a dtype's peak, HBM, NVLink or NIC bandwidth) and eta = W / (X * t) what the ops achieved of
// it (latencies, launches, quantization and SM sharing included), t their time on the path.
// Evaluated, the terms add up to the analytic iteration time.
#pragma once

#include <string>
#include <vector>

#include "analytic/iteration.h"
#include "models/gpu/time_causes.h"
#include "platforms/platform_config.h"
#include "workloads/program.h"

namespace tessera::analytic {

struct SymbolicTerm {
  models::TimeCause cause = models::TimeCause::Compute;
  std::string what;            // "matmul bf16", "memory-bound", "all-reduce in a node", ...
  std::string parameter;       // "peak_bf16", "hbm", "nvlink", "nic", "latency"
  double parameter_value = 0;  // in units/s: FLOP/s or bytes/s (0 for "latency")
  std::string work_unit;       // "FLOP" or "B"
  double work = 0;             // on the critical path
  int ops = 0;                 // ops of the path in this term
  double seconds = 0;          // their time on the path
  // W / (eta X), evaluated (equals `seconds` but for rounding); eta = W / (X seconds).
  double efficiency() const;
  double value() const;
};

struct SymbolicForm {
  std::vector<SymbolicTerm> terms;  // in order of first appearance on the path
  double value_s = 0;               // the terms evaluated and added up
};

SymbolicForm symbolic_form(const AnalyticResult& result, const workloads::Job& job,
                           const platforms::PlatformConfig& platform);

}  // namespace tessera::analytic
