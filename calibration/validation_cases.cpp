#include "calibration/validation_cases.h"

#include <cmath>

#include "calibration/csv_table.h"
#include "platforms/platform_file.h"
#include "workloads/errors.h"

namespace tessera::calibration {
namespace {

using workloads::InputError;

using Row = CsvRow;

std::string stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.find_last_of('.'));
}

// The arguments every case shares: platform, nodes, framework, model geometry.
std::vector<std::string> common_args(const Row& r, const CaseDefaults& d, int64_t gpus) {
  const std::string platform = r.has("platform") ? r.text("platform") : d.platform;
  const int per_node = platforms::load_platform(platform).node.gpus;
  if (gpus % per_node != 0)
    r.fail("gpus", std::to_string(gpus) + " GPUs are not whole nodes of " + platform + " (" +
                       std::to_string(per_node) + " GPUs each)");
  std::vector<std::string> a = {"--platform", platform, "--nodes", std::to_string(gpus / per_node),
                                "--framework", r.has("framework") ? r.text("framework") : d.framework,
                                "--fidelity", d.fidelity, "--model", "gpt3-1.3b",
                                "--hidden", r.integer_text("hidden"), "--heads", r.integer_text("heads"),
                                "--seq", r.has("seq") ? r.integer_text("seq") : std::to_string(d.seq),
                                "--vocab", r.has("vocab") ? r.integer_text("vocab") : std::to_string(d.vocab),
                                "--dtype", r.has("dtype") ? r.text("dtype") : "fp16"};
  for (const char* column : {"attention", "zero", "cp"})
    if (r.has(column)) a.insert(a.end(), {std::string("--") + column, r.text(column)});
  if (r.has("sequence_parallel") && r.text("sequence_parallel") == "yes") a.push_back("--sequence-parallel");
  return a;
}

std::vector<std::string> parallel_args(const Row& r, int64_t dp) {
  std::vector<std::string> a = {"--layers", r.integer_text("layers"), "--tp", r.integer_text("tp"),
                                "--pp", r.integer_text("pp"), "--dp", std::to_string(dp),
                                "--global-batch", r.integer_text("global_batch"),
                                "--micro-batch", r.integer_text("micro_batch")};
  if (r.has("vpp") && r.integer("vpp") > 1)
    a.insert(a.end(), {"--schedule", "interleaved", "--vpp", r.integer_text("vpp")});
  return a;
}

std::vector<ValidationCase> iteration_cases(const Row& r, const CaseDefaults& d) {
  const int64_t gpus = r.integer("gpus");
  ValidationCase c;
  c.line = r.line;
  c.name = stem(r.file) + ":" + std::to_string(r.line) + " (" +
           (r.has("params_b") ? r.text("params_b") + "B, " : "") + std::to_string(gpus) + " GPUs)";
  c.gpus = gpus;
  c.run_args = common_args(r, d, gpus);
  const auto par = parallel_args(r, r.integer("dp"));
  c.run_args.insert(c.run_args.end(), par.begin(), par.end());
  c.run_args.insert(c.run_args.end(), {"--recompute", r.text("recompute")});
  c.measured_s = r.number("measured_iteration_s");
  return {c};
}

std::vector<ValidationCase> recompute_cases(const Row& r, const CaseDefaults& d) {
  const int64_t gpus = r.integer("gpus"), dp = gpus / (r.integer("tp") * r.integer("pp"));
  if (dp * r.integer("tp") * r.integer("pp") != gpus) r.fail("gpus", "not a multiple of tp x pp");
  std::vector<ValidationCase> out;
  for (const bool selective : {false, true}) {
    ValidationCase c;
    c.line = r.line;
    c.name = stem(r.file) + ":" + std::to_string(r.line) + " (" + r.text("model") + ", " +
             (selective ? "selective + SP" : "full recompute") + ")";
    c.gpus = gpus;
    c.run_args = common_args(r, d, gpus);
    const auto par = parallel_args(r, dp);
    c.run_args.insert(c.run_args.end(), par.begin(), par.end());
    c.run_args.insert(c.run_args.end(), {"--recompute", selective ? "selective" : "full"});
    if (selective) c.run_args.push_back("--sequence-parallel");
    c.measured_s = r.number(selective ? "selective_plus_sp_iteration_s" : "full_recompute_iteration_s");
    out.push_back(c);
  }
  return out;
}

// One layer's times: three layers (layer 1 between two others) on one pipeline stage.
std::vector<ValidationCase> layer_cases(const Row& r, const CaseDefaults& d) {
  const int64_t tp = r.integer("tp"), mb = r.integer("micro_batch");
  ValidationCase c;
  c.line = r.line;
  c.layer = true;
  c.name = stem(r.file) + ":" + std::to_string(r.line) + " (" + r.text("experiment") + ")";
  c.gpus = tp;
  c.run_args = common_args(r, d, tp);
  c.run_args.insert(c.run_args.end(), {"--layers", "3", "--tp", std::to_string(tp), "--pp", "1",
                                       "--dp", "1", "--micro-batch", std::to_string(mb),
                                       "--global-batch", std::to_string(mb),
                                       "--recompute", r.text("recompute")});
  c.measured_forward_s = r.number("forward_ms") * 1e-3;
  c.measured_backward_s = r.number("backward_ms") * 1e-3;
  return {c};
}

}  // namespace

std::vector<ValidationCase> read_validation_cases(const std::string& path, const CaseDefaults& d) {
  std::vector<ValidationCase> cases;
  for (const Row& r : read_csv_table(path, "cases file").rows) {
    std::vector<ValidationCase> more;
    if (r.cells.count("measured_iteration_s")) more = iteration_cases(r, d);
    else if (r.cells.count("full_recompute_iteration_s")) more = recompute_cases(r, d);
    else if (r.cells.count("forward_ms")) more = layer_cases(r, d);
    else
      throw InputError(path + ": unknown layout (expected a measured_iteration_s, "
                       "full_recompute_iteration_s or forward_ms column; docs/validation.md)");
    cases.insert(cases.end(), more.begin(), more.end());
  }
  if (cases.empty()) throw InputError(path + ": no cases");
  return cases;
}

std::vector<double> CaseResult::errors() const {
  if (!ok) return {1.0};
  if (c->layer)
    return {predicted_forward_s / c->measured_forward_s - 1, predicted_backward_s / c->measured_backward_s - 1};
  return {predicted_s / c->measured_s - 1};
}

double mean_absolute_percentage_error(const std::vector<CaseResult>& results) {
  double sum = 0;
  int n = 0;
  for (const CaseResult& r : results)
    for (double e : r.errors()) sum += std::fabs(e), ++n;
  return n ? 100.0 * sum / n : 0.0;
}

}  // namespace tessera::calibration
