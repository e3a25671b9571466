#include "sc_main/analyze_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "sc_main/case_runner.h"
#include "sc_main/input_error.h"
#include "workloads/limits.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

// Flow fidelity confirms at +-10%: a step large enough to stand out of the flow model's own
// discreteness (chunk and flow boundaries), small enough to stay on one side of a change of
// collective algorithm.
constexpr double kConfirmStep = 0.10;
constexpr int kConfirmed = 3;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

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
      ("sensitivity", po::bool_switch(&a.sensitivity),
       "the elasticity d log(iteration time) / d log(parameter) of each hardware parameter, and the time with it doubled")
      ("confirm", po::bool_switch(&a.confirm), "with --sensitivity: re-run the three largest in flow fidelity and print both")
      ("step", po::value(&a.step)->default_value(0.01), "relative step of the central differences, in [0.0001, 0.5]");
  return analysis;
}

void check_analyze_settings(const AnalyzeSettings& a) {
  check_option("--step", a.step, limits::Range{1e-4, 0.5});
  if (!a.sensitivity) throw InputError("tessera analyze: name an analysis (--sensitivity)");
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
