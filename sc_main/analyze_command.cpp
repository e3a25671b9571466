#include "sc_main/analyze_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "analytic/symbolic.h"
#include "sc_main/case_runner.h"
#include "sc_main/input_error.h"
#include "sc_main/report.h"
#include "workloads/limits.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

// Flow fidelity confirms at +-10%: a step large enough to stand out of the flow model's own
// discreteness (chunk and flow boundaries), small enough to stay on one side of a change of
// collective algorithm.
constexpr double kConfirmStep = 0.10;
constexpr int kConfirmed = 3;

// The flow fidelity iteration times of the parameters at (1 - step) and (1 + step).
std::vector<std::pair<double, double>> flow_times(const std::vector<Sensitivity>& top,
                                                  const platforms::PlatformConfig& platform,
                                                  const std::vector<std::string>& run_args, std::ostream& err) {
  char scratch_template[] = "/tmp/tessera-analyze-XXXXXX";
  if (mkdtemp(scratch_template) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
  const std::string scratch = scratch_template;
  std::vector<ChildRun> runs;
  for (size_t k = 0; k < top.size(); ++k)
    for (double factor : {1 - kConfirmStep, 1 + kConfirmStep}) {
      ChildRun run;
      const std::string base = scratch + "/run" + std::to_string(runs.size());
      run.args = {"run", "-q", "--fidelity", "flow", "--report", base + ".json"};
      run.args.insert(run.args.end(), run_args.begin(), run_args.end());
      for (const std::string& setting : scaled_settings(*top[k].parameter, platform, factor))
        run.args.insert(run.args.end(), {"--set", setting});
      run.log = base + ".log";
      runs.push_back(std::move(run));
    }
  run_children(runs, 2, [](size_t) {});
  std::vector<double> times;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].status != 0) {
      err << "tessera: error: --confirm: a flow run failed: " << last_line(runs[i].log) << "\n";
      std::filesystem::remove_all(scratch);
      throw std::runtime_error("--confirm: flow fidelity run " + std::to_string(i) + " failed");
    }
    const std::string report = scratch + "/run" + std::to_string(i) + ".json";
    std::ifstream in(report);
    times.push_back(nlohmann::json::parse(in)["iteration_time_s"].get<double>());
  }
  std::filesystem::remove_all(scratch);
  std::vector<std::pair<double, double>> out;
  for (size_t k = 0; k < top.size(); ++k) out.emplace_back(times[2 * k], times[2 * k + 1]);
  return out;
}

void confirm(const std::vector<Sensitivity>& sensitivities, const platforms::PlatformConfig& platform,
             const IterationTime& iteration, const std::vector<std::string>& run_args, std::ostream& out,
             std::ostream& err) {
  std::vector<Sensitivity> top;
  for (const Sensitivity& s : sensitivities)
    if (s.elasticity != 0 && static_cast<int>(top.size()) < kConfirmed) top.push_back(s);
  out << "  confirmed in flow fidelity, central differences at +-" << format("%g", kConfirmStep * 100) << "%\n";
  out << "  parameter             analytic    flow\n";
  const auto flow = flow_times(top, platform, run_args, err);
  for (size_t k = 0; k < top.size(); ++k) {
    const Sensitivity& s = top[k];
    const double analytic = elasticity(iteration(scaled_settings(*s.parameter, platform, 1 - kConfirmStep)),
                                       iteration(scaled_settings(*s.parameter, platform, 1 + kConfirmStep)), kConfirmStep);
    char line[160];
    std::snprintf(line, sizeof line, "  %-20s  %+8.4f   %+8.4f\n", s.parameter->name.c_str(), analytic,
                  elasticity(flow[k].first, flow[k].second, kConfirmStep));
    out << line;
  }
}

}  // namespace

po::options_description analyze_options(AnalyzeSettings& a) {
  po::options_description analysis("analysis");
  analysis.add_options()
      ("symbolic", po::bool_switch(&a.symbolic),
       "the iteration time as a sum of terms W / (eta X) of named parameters over the critical path, each labelled by cause")
      ("sensitivity", po::bool_switch(&a.sensitivity),
       "the elasticity d log(iteration time) / d log(parameter) of each hardware parameter, and the time with it doubled")
      ("confirm", po::bool_switch(&a.confirm), "with --sensitivity: re-run the three largest in flow fidelity and print both")
      ("step", po::value(&a.step)->default_value(0.01), "relative step of the central differences, in [0.0001, 0.5]");
  return analysis;
}

void check_analyze_settings(const AnalyzeSettings& a) {
  check_option("--step", a.step, limits::Range{1e-4, 0.5});
  if (!a.sensitivity && !a.symbolic) throw InputError("tessera analyze: name an analysis (--sensitivity, --symbolic)");
  if (a.confirm && !a.sensitivity) throw InputError("--confirm: confirms --sensitivity; add it");
}

namespace {

// The workload's parameters and the per-pass quantities the terms name.
void print_symbols(std::ostream& out, const analytic::WorkloadSymbols& symbols) {
  if (symbols.values.empty()) return;
  out << "    with";
  for (size_t k = 0; k < symbols.order.size(); ++k)
    out << (k ? ", " : " ") << symbols.order[k] << " = " << format("%g", symbols.values.at(symbols.order[k]));
  out << "\n    L = " << symbols.layer_passes.text() << " = " << format("%g", symbols.values.at("L"))
      << "   layer passes of a stage's chunks on the path of a uniform pipeline\n";
  if (!symbols.layer_forward_flops.empty())
    out << "    F_f = " << symbols.layer_forward_flops.text() << " = " << format("%.4g", symbols.values.at("F_f"))
        << " FLOP   matmul of one layer's forward, one micro-batch, one GPU\n";
  out << "    A = " << symbols.activation_bytes.text() << " = " << format("%.4g", symbols.values.at("A"))
      << " B   the activation buffer of a tensor-parallel collective\n";
}

std::string term_text(const analytic::SymbolicTerm& t) {
  if (t.parameter == "latency") return "latency (" + t.what + ")";
  const bool flops = t.work_unit == "FLOP";
  return format("%.4g ", t.work) + t.work_unit + " / (" + format("%.4f", t.efficiency()) + " x " + t.parameter +
         " = " + format("%g", t.parameter_value / (flops ? 1e12 : 1e9)) + (flops ? " TFLOP/s)" : " GB/s)");
}

}  // namespace

void print_symbolic(std::ostream& out, const platforms::PlatformConfig& platform,
                    const platforms::RoutedTopology& topology, const workloads::Job& job,
                    const SimulationOptions& options, const analytic::WorkloadSymbols& symbols) {
  analytic::AnalyticOptions a;
  a.costs.kernel_timer = options.kernel_timer;
  a.costs.collectives = options.collectives;
  a.costs.collectives.chunk_bytes = options.chunk_bytes;
  a.critical_path = true;
  const analytic::AnalyticResult r = analytic::cost_iteration(platform, topology, job, a);
  if (r.deadlocked) throw InputError("the program cannot finish: " + r.deadlock);
  const analytic::SymbolicForm form = analytic::symbolic_form(r, job, platform, symbols);
  out << "tessera analyze: " << job.info.model << " on " << platform.name << " (" << platform.gpu_count() << " x "
      << platform.gpu.name << "), analytic iteration time " << format("%.3f ms", r.iteration_time_s * 1e3) << "\n";
  out << "  symbolic form: T = sum of W / (eta x X) over the critical path (" << r.critical_path.size()
      << " ops): W the work of its ops, X a named parameter, eta what they achieved of it\n";
  print_symbols(out, symbols);
  char line[300];
  std::snprintf(line, sizeof line, "  %-24s %-58s %14s\n", "cause", "term", "value");
  out << line;
  double from_formulas = 0;
  for (const analytic::SymbolicTerm& t : form.terms) {
    std::snprintf(line, sizeof line, "  %-24s %-58s %11.3f ms   %s, %d ops\n", models::to_string(t.cause),
                  term_text(t).c_str(), t.value() * 1e3, t.what.c_str(), t.ops);
    out << line;
    if (!t.layers.empty()) out << "      W = " << t.work_text() << " " << t.work_unit << "\n";
    from_formulas += t.value(symbols.values);
  }
  out << "  T = " << format("%.6f ms", form.value_s * 1e3) << " (the terms evaluated; the analytic model: "
      << format("%.6f ms", r.iteration_time_s * 1e3) << ")\n";
  if (!symbols.values.empty())
    out << "  T = " << format("%.6f ms", from_formulas * 1e3) << " (the formulas of W evaluated with the parameters)\n";
}

int run_analyses(const AnalyzeSettings& a, const platforms::PlatformConfig& platform, const workloads::Job& job,
                 const IterationTime& iteration, const std::vector<std::string>& run_args, std::ostream& out,
                 std::ostream& err) {
  const double base = iteration({});
  out << "tessera analyze: " << job.info.model << " on " << platform.name << " (" << platform.gpu_count() << " x "
      << platform.gpu.name << "), analytic iteration time " << format("%.3f ms", base * 1e3) << "\n";
  const std::vector<Sensitivity> s = sensitivities(platform, iteration, base, a.step);
  print_sensitivities(out, s, base, a.step);
  if (a.confirm) confirm(s, platform, iteration, run_args, out, err);
  return 0;
}

}  // namespace tessera::app
