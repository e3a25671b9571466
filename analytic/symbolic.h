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
//
// W follows the workload: the work a term's ops do inside transformer layers is, per phase
// (forward, backward, recompute), a number of layer passes times the work of one pass (one
// layer, one micro-batch, one GPU). Where the passes are the schedule's closed form
// L = (m v + p - 1) layers / (p v) and the unit a formula of the model (F_f, the matmul FLOPs of
// a layer's forward; A, a TP collective's activation buffer), W is written in the named
// parameters b, s, h, layers, t, p, d, v, m; the rest of the path's work (embedding, logits,
// gradient reduction, optimizer) stays a number.
#pragma once

#include <string>
#include <vector>

#include "analytic/formula.h"
#include "analytic/iteration.h"
#include "models/gpu/time_causes.h"
#include "platforms/platform_config.h"
#include "workloads/model.h"
#include "workloads/program.h"
#include "workloads/strategy.h"

namespace tessera::analytic {

// What the symbolic form knows of the workload (empty for a job file).
struct WorkloadSymbols {
  SymbolValues values;              // b, s, h, layers, t, p, d, v, m (+ c, h_kv, f, e; L, F_f, A)
  std::vector<std::string> order;   // the parameters in the order they print (not L, F_f, A)
  // F_f: matmul FLOPs of one transformer layer's forward, one micro-batch, one GPU; empty where
  // the model has no closed form here (MoE, generic layers).
  Formula layer_forward_flops;
  Formula activation_bytes;         // A = b s h e (/ c): the buffer of a TP collective
  Formula layer_passes;             // L: (m v + p - 1) layers / (p v) (m layers without a pipeline)
};
WorkloadSymbols workload_symbols(const workloads::ModelSpec& model, const workloads::ResolvedStrategy& strategy);

// The work a term's ops do in transformer layers in one phase ('f' forward, 'b' backward,
// 'r' recompute): `passes` layer passes of `unit` each.
struct LayerPasses {
  char phase = 'f';
  double unit = 0;
  double passes = 0;
  Formula unit_formula;    // a multiple of F_f or of A (1 - 1/t); empty: only a number
  Formula passes_formula;  // "L" where the passes are L; else empty
};

struct SymbolicTerm {
  models::TimeCause cause = models::TimeCause::Compute;
  std::string what;            // "matmul bf16", "memory-bound", "all-reduce in a node", ...
  std::string parameter;       // "peak_bf16", "hbm", "nvlink", "nic", "latency"
  double parameter_value = 0;  // in units/s: FLOP/s or bytes/s (0 for "latency")
  std::string work_unit;       // "FLOP" or "B"
  double work = 0;             // on the critical path
  int ops = 0;                 // ops of the path in this term
  double seconds = 0;          // their time on the path
  std::vector<LayerPasses> layers;  // work = sum of passes x unit + other_work
  double other_work = 0;
  // W written in the named parameters where it can be (numbers elsewhere), and that form
  // evaluated with their values.
  std::string work_text() const;
  double work_value(const SymbolValues& values) const;
  // W / (eta X), evaluated (equals `seconds` but for rounding); eta = W / (X seconds).
  double efficiency() const;
  double value() const;
  // The same with W written in the named parameters (work_value) in place of W.
  double value(const SymbolValues& values) const;
};

struct SymbolicForm {
  std::vector<SymbolicTerm> terms;  // in order of first appearance on the path
  double value_s = 0;               // the terms evaluated and added up
};

SymbolicForm symbolic_form(const AnalyticResult& result, const workloads::Job& job,
                           const platforms::PlatformConfig& platform, const WorkloadSymbols& symbols = {});

}  // namespace tessera::analytic
