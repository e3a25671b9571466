// Measured runs to validate against (`tessera validate --cases FILE.csv`): each CSV row becomes
// one or more cases, each a `tessera run` command line and the measured times it must
// reproduce. Three layouts are read (docs/validation.md):
//   - iteration tables (Megatron-LM SC21 Table 1): params_b, heads, hidden, layers, tp, pp, dp,
//     gpus, global_batch, micro_batch, vpp, recompute, dtype, measured_iteration_s; optional
//     seq (2048), vocab (51200), platform (dgx-a100), attention, framework, zero,
//     sequence_parallel, cp;
//   - recompute tables (Korthikanti et al. Tables 3 and 5): model, heads, hidden, layers, tp, pp,
//     gpus, global_batch, micro_batch, vpp, full_recompute_iteration_s,
//     selective_plus_sp_iteration_s: two cases per row (full recompute; selective with SP);
//   - layer tables (Korthikanti Table 4): experiment, sequence_parallel, recompute, forward_ms,
//     backward_ms and the layer's geometry hidden, heads, seq, micro_batch, tp: one transformer
//     layer's forward and backward time.
#pragma once

#include <string>
#include <vector>

namespace tessera::calibration {

struct ValidationCase {
  std::string name;                 // e.g. "megatron_sc21_table1_dev:3 (39.1B, 512 GPUs)"
  int line = 0;                     // CSV line
  std::vector<std::string> run_args;  // `tessera run` arguments (without the command)
  bool layer = false;               // a layer case: forward and backward of layer 1
  int64_t gpus = 0;                 // GPUs the case simulates
  double measured_s = 0;            // iteration cases: the iteration time
  double measured_forward_s = 0;    // layer cases
  double measured_backward_s = 0;
};

struct CaseDefaults {
  std::string platform = "dgx-a100";
  std::string framework = "megatron-2021";
  std::string fidelity = "auto";
  int64_t seq = 2048, vocab = 51200;
};

// Reads a cases file; throws workloads::InputError "FILE:LINE: column 'c': ..." on a bad cell,
// a missing column or an unknown layout.
std::vector<ValidationCase> read_validation_cases(const std::string& path,
                                                  const CaseDefaults& defaults = {});

// The result of one case.
struct CaseResult {
  const ValidationCase* c = nullptr;
  bool ok = false;
  std::string error;      // why the run failed
  double predicted_s = 0;                 // iteration cases
  double predicted_forward_s = 0, predicted_backward_s = 0;  // layer cases
  double wall_s = 0;
  // Signed errors (predicted / measured - 1): one for an iteration case, two for a layer case.
  std::vector<double> errors() const;
};

// Mean absolute percentage error over every error of every case that ran (a failed case counts
// as 100%).
double mean_absolute_percentage_error(const std::vector<CaseResult>& results);

}  // namespace tessera::calibration
