#include "sc_main/validate_command.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "calibration/svg_plot.h"
#include "calibration/validation_cases.h"
#include "sc_main/case_runner.h"
#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "sc_main/report.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

using calibration::CaseResult;
using calibration::ValidationCase;

struct ValidateSettings {
  std::vector<std::string> cases;
  int jobs = 1;
  std::string report, svg, markdown;
  std::string command_line;  // as typed, for the Markdown report
  double max_mape = -1;
  double max_error = -1;
  int64_t max_gpus = 0;
  calibration::CaseDefaults defaults;
  std::string calibration;
};

po::options_description validate_options(ValidateSettings& s) {
  po::options_description d("tessera validate --cases FILE.csv [options]");
  d.add_options()
      ("help,h", "this help")
      ("cases", po::value(&s.cases)->composing(), "a CSV of measured runs (repeatable; layouts in docs/validation.md)")
      ("jobs,j", po::value(&s.jobs)->default_value(1), "cases simulated at once, each in its own process")
      ("report", po::value(&s.report), "write every case's command, measurement, prediction and error as JSON")
      ("svg", po::value(&s.svg), "plot predicted against measured time, one point per case")
      ("markdown", po::value(&s.markdown), "write the results as a Markdown page (docs/validation.md is made so)")
      ("max-mape", po::value(&s.max_mape), "exit 1 when the mean absolute percentage error exceeds this (percent)")
      ("max-gpus", po::value(&s.max_gpus), "skip (and list) the cases of more GPUs than this")
      ("max-error", po::value(&s.max_error), "exit 1 when any case's error exceeds this (percent, either sign)")
      ("platform", po::value(&s.defaults.platform)->default_value("dgx-a100"), "platform of rows without a platform column")
      ("framework", po::value(&s.defaults.framework)->default_value("megatron-2021"),
       "framework of rows without a framework column (the tables are Megatron-LM's of 2021-2022)")
      ("fidelity", po::value(&s.defaults.fidelity)->default_value("auto"), "packet, flow, analytic or auto, as in tessera run")
      ("calibration", po::value(&s.calibration), "a measured kernel table for every case (tessera calibrate)");
  return d;
}

void check(const ValidateSettings& s, const po::variables_map& vm) {
  if (s.cases.empty()) throw InputError("--cases: give at least one CSV file of measured runs");
  check_option("--jobs", double(s.jobs), limits::integers(1, 64));
  const limits::Range percent{0, 1000, true};
  if (vm.count("max-mape")) check_option("--max-mape", s.max_mape, percent);
  if (vm.count("max-error")) check_option("--max-error", s.max_error, percent);
  if (vm.count("max-gpus")) check_option("--max-gpus", double(s.max_gpus), limits::integers(1, limits::kMaxGpus));
}

// Forward and backward of layer 1 on GPU 0, from a run's trace: from the first op of the
// phase to the end of its last (collectives included; backward includes recomputation).
void layer_times(const std::string& trace_path, CaseResult& r) {
  std::ifstream in(trace_path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  double f0 = INFINITY, f1 = 0, b0 = INFINITY, b1 = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("pid", -1) != 0) continue;
    const std::string name = e.value("name", "");
    if (name.rfind("layer1.", 0) != 0) continue;
    const double t0 = e["ts"].get<double>() * 1e-6, t1 = t0 + e["dur"].get<double>() * 1e-6;
    const bool forward = name.size() > 4 && name.compare(name.size() - 4, 4, ".fwd") == 0;
    (forward ? f0 : b0) = std::min(forward ? f0 : b0, t0);
    (forward ? f1 : b1) = std::max(forward ? f1 : b1, t1);
  }
  if (!(f1 > 0 && b1 > 0)) throw std::runtime_error("the trace has no ops of layer1");
  r.predicted_forward_s = f1 - f0;
  r.predicted_backward_s = b1 - b0;
}

CaseResult collect(const ValidationCase& c, const ChildRun& run, const std::string& base) {
  CaseResult r;
  r.c = &c;
  r.wall_s = run.wall_s;
  if (run.status != 0) {
    r.error = "exit " + std::to_string(run.status) + ": " + last_line(run.log);
    return r;
  }
  try {
    std::ifstream in(base + ".json");
    r.predicted_s = nlohmann::json::parse(in)["iteration_time_s"].get<double>();
    if (c.layer) layer_times(base + ".trace.json", r);
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = std::string("unreadable result: ") + e.what();
  }
  return r;
}

std::string percent(double e) {
  char t[32];
  std::snprintf(t, sizeof t, "%+.1f%%", 100 * e);
  return t;
}

void print_result(std::ostream& out, size_t index, const CaseResult& r) {
  char line[400];
  const ValidationCase& c = *r.c;
  if (!r.ok) {
    std::snprintf(line, sizeof line, "%3zu  %-58s  FAILED: %s", index + 1, c.name.c_str(), r.error.c_str());
  } else if (c.layer) {
    const auto e = r.errors();
    std::snprintf(line, sizeof line, "%3zu  %-58s  fwd %7.2f ms %7.2f ms %7s   bwd %7.2f ms %7.2f ms %7s",
                  index + 1, c.name.c_str(), c.measured_forward_s * 1e3, r.predicted_forward_s * 1e3,
                  percent(e[0]).c_str(), c.measured_backward_s * 1e3, r.predicted_backward_s * 1e3,
                  percent(e[1]).c_str());
  } else {
    std::snprintf(line, sizeof line, "%3zu  %-58s  %9.3f s %9.3f s %7s", index + 1, c.name.c_str(),
                  c.measured_s, r.predicted_s, percent(r.errors()[0]).c_str());
  }
  out << line << "  (" << std::lround(r.wall_s) << " s)\n";
}

nlohmann::ordered_json result_json(const CaseResult& r) {
  const ValidationCase& c = *r.c;
  std::string command = "tessera run";
  for (const std::string& a : c.run_args) command += " " + a;
  nlohmann::ordered_json j = {{"case", c.name}, {"command", command}, {"ok", r.ok}, {"wall_s", r.wall_s}};
  if (!r.ok) j["error"] = r.error;
  if (c.layer) {
    j["measured_forward_s"] = c.measured_forward_s;
    j["measured_backward_s"] = c.measured_backward_s;
    if (r.ok) j["predicted_forward_s"] = r.predicted_forward_s, j["predicted_backward_s"] = r.predicted_backward_s;
  } else {
    j["measured_iteration_s"] = c.measured_s;
    if (r.ok) j["predicted_iteration_s"] = r.predicted_s;
  }
  j["errors"] = r.errors();
  return j;
}

std::string markdown_row(const CaseResult& r) {
  const ValidationCase& c = *r.c;
  char line[400];
  if (!r.ok) {
    std::snprintf(line, sizeof line, "| %s | | failed: %s | |\n", c.name.c_str(), r.error.c_str());
  } else if (c.layer) {
    const auto e = r.errors();
    std::snprintf(line, sizeof line,
                  "| %s forward | %.2f ms | %.2f ms | %s |\n| %s backward | %.2f ms | %.2f ms | %s |\n",
                  c.name.c_str(), c.measured_forward_s * 1e3, r.predicted_forward_s * 1e3,
                  percent(e[0]).c_str(), c.name.c_str(), c.measured_backward_s * 1e3,
                  r.predicted_backward_s * 1e3, percent(e[1]).c_str());
  } else {
    std::snprintf(line, sizeof line, "| %s | %.3f s | %.3f s | %s |\n", c.name.c_str(), c.measured_s,
                  r.predicted_s, percent(r.errors()[0]).c_str());
  }
  return line;
}

void write_markdown(const ValidateSettings& s, const std::vector<CaseResult>& results, double mape) {
  std::ostringstream out;
  out << "# Validation against measured runs\n\n"
      << "Generated by `" << s.command_line << "`: every row simulated with the `tessera run` "
      << "a user would type (`--report` lists each command), nothing fitted to these rows "
      << "(docs/compute-model.md says where every parameter comes from, and what is missing).\n\n"
      << "| case | measured | tessera | error |\n|---|---|---|---|\n";
  for (const CaseResult& r : results) out << markdown_row(r);
  char line[120];
  std::snprintf(line, sizeof line, "\nMean absolute percentage error: **%.2f%%** over %zu cases.\n", mape,
                results.size());
  out << line;
  if (!s.svg.empty())
    out << "\n![predicted against measured](" << std::filesystem::path(s.svg).filename().string() << ")\n";
  write_output(s.markdown, out.str());
}

void write_outputs(const ValidateSettings& s, const std::vector<CaseResult>& results, double mape) {
  if (!s.markdown.empty()) write_markdown(s, results, mape);
  if (!s.report.empty()) {
    nlohmann::ordered_json j = {{"cases_files", s.cases}, {"mape_percent", mape}};
    j["cases"] = nlohmann::ordered_json::array();
    for (const CaseResult& r : results) j["cases"].push_back(result_json(r));
    write_json_file(s.report, j);
  }
  if (!s.svg.empty()) {
    calibration::Scatter sc{"tessera against measured runs (MAPE " + percent(mape / 100).substr(1) + ")", "s", {}};
    for (const CaseResult& r : results) {
      if (!r.ok) continue;
      if (r.c->layer) {
        sc.points.push_back({r.c->name + " forward", r.c->measured_forward_s, r.predicted_forward_s});
        sc.points.push_back({r.c->name + " backward", r.c->measured_backward_s, r.predicted_backward_s});
      } else {
        sc.points.push_back({r.c->name, r.c->measured_s, r.predicted_s});
      }
    }
    write_output(s.svg, calibration::render_scatter_svg(sc));
  }
}

std::vector<std::string> child_args(const ValidationCase& c, const ValidateSettings& s, const std::string& base) {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), c.run_args.begin(), c.run_args.end());
  a.insert(a.end(), {"--quiet", "--report", base + ".json"});
  if (!s.calibration.empty()) a.insert(a.end(), {"--calibration", s.calibration});
  if (c.layer) a.insert(a.end(), {"--trace", base + ".trace.json", "--trace-bucket-us", "1000000"});
  return a;
}

}  // namespace

int command_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ValidateSettings s;
  po::options_description desc = validate_options(s);
  po::variables_map vm;
  if (!parse_command_options(args, desc, out, vm)) return 0;
  s.command_line = "tessera validate";
  for (const std::string& a : args) s.command_line += " " + a;
  check(s, vm);
  std::vector<OutputPath> inputs;
  for (const std::string& file : s.cases) inputs.push_back({"--cases", file});
  check_output_paths({{"--report", s.report}, {"--svg", s.svg}, {"--markdown", s.markdown}}, inputs);
  for (const std::string& file : s.cases) require_input_file(file, "--cases");
  std::vector<ValidationCase> cases;
  for (const std::string& file : s.cases) {
    for (ValidationCase& c : calibration::read_validation_cases(file, s.defaults)) {
      if (s.max_gpus > 0 && c.gpus > s.max_gpus)
        out << "skipped (" << c.gpus << " GPUs > --max-gpus): " << c.name << "\n";
      else
        cases.push_back(std::move(c));
    }
  }
  if (cases.empty()) throw InputError("--max-gpus " + std::to_string(s.max_gpus) + " leaves no case to run");
  char scratch_template[] = "/tmp/tessera-validate-XXXXXX";
  if (mkdtemp(scratch_template) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
  const std::string scratch = scratch_template;
  std::vector<ChildRun> runs(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string base = scratch + "/case" + std::to_string(i);
    runs[i].args = child_args(cases[i], s, base);
    runs[i].log = base + ".log";
  }
  out << "tessera validate: " << cases.size() << " cases, " << s.jobs << " at a time\n";
  const auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results(cases.size());
  run_children(runs, s.jobs, [&](size_t i) {
    results[i] = collect(cases[i], runs[i], scratch + "/case" + std::to_string(i));
    print_result(out, i, results[i]);
    out.flush();
  });
  std::filesystem::remove_all(scratch);
  const double mape = calibration::mean_absolute_percentage_error(results);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char line[160];
  std::snprintf(line, sizeof line, "MAPE %.2f%% over %zu cases (%.0f s wall)\n", mape, cases.size(), wall);
  out << line;
  write_outputs(s, results, mape);
  for (const CaseResult& r : results)
    if (!r.ok) {
      err << "tessera: error: " << r.c->name << " failed: " << r.error << "\n";
      return 1;
    }
  if (s.max_mape > 0 && mape > s.max_mape) {
    err << "tessera: MAPE " << mape << "% exceeds --max-mape " << s.max_mape << "%\n";
    return 1;
  }
  for (const CaseResult& r : results)
    for (double e : r.errors())
      if (s.max_error > 0 && std::fabs(e) * 100 > s.max_error) {
        err << "tessera: " << r.c->name << " is off by " << percent(e) << ", beyond --max-error "
            << s.max_error << "%\n";
        return 1;
      }
  return 0;
}

}  // namespace tessera::app
