#include "sc_main/plan_command.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "sc_main/compute_options.h"
#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/pipeline_planner.h"
#include "sc_main/platform_options.h"
#include "sc_main/report.h"
#include "sc_main/sweep_command.h"
#include "sc_main/sweep_engine.h"
#include "workloads/workload.h"

namespace po = boost::program_options;
using nlohmann::json;
using nlohmann::ordered_json;

namespace tessera::app {
namespace {

using workloads::UnitCosts;
using workloads::interleave;
using workloads::partition_layers;
using workloads::slowest_stage;

struct PlanSettings {
  PlatformSettings platform;
  ComputeSettings compute;
  std::string model = "gpt3-1.3b", out, report;
  int pp = 0, tp = 1, jobs = 1;
  int64_t micro_batch = 1, global_batch = 0;
};

po::options_description plan_options(PlanSettings& s) {
  po::options_description d("tessera plan --model M --platform P [options]");
  d.add_options()
      ("help,h", "this help")
      ("model", po::value(&s.model)->default_value("gpt3-1.3b"), "model: a zoo name or a YAML file")
      ("pp", po::value(&s.pp), "pipeline stages (default: the GPUs of a node)")
      ("tp", po::value(&s.tp)->default_value(1), "tensor-parallel size (kept on neighbouring GPUs)")
      ("micro-batch", po::value(&s.micro_batch)->default_value(1), "samples per micro-batch")
      ("global-batch", po::value(&s.global_batch), "samples per iteration (default: 4 x pp micro-batches per replica)")
      ("out", po::value(&s.out), "write the plan as a strategy YAML (tessera run --strategy FILE)")
      ("report", po::value(&s.report), "write the plan, the measured layer times and every simulated candidate as JSON")
      ("jobs,j", po::value(&s.jobs)->default_value(1), "candidates simulated at once");
  d.add(platform_options(s.platform)).add(compute_options(s.compute));
  return d;
}

std::vector<std::string> base_args(const PlanSettings& s, const po::variables_map& vm) {
  std::vector<std::string> a = {"--model=" + s.model, "--platform=" + s.platform.platform};
  if (vm.count("nodes")) a.push_back("--nodes=" + std::to_string(vm["nodes"].as<int64_t>()));
  if (vm.count("gpus")) a.push_back("--gpus=" + std::to_string(vm["gpus"].as<int64_t>()));
  for (const std::string& set : s.platform.sets) a.insert(a.end(), {"--set", set});
  a.push_back("--framework=" + s.compute.framework);
  a.push_back("--compute-model=" + s.compute.compute_model);
  a.push_back("--fidelity=flow");
  return a;
}

// The strategy of a candidate as run options (and the YAML the plan is written as).
struct PlanCandidate {
  std::string name;
  workloads::Strategy strategy;
  std::vector<int64_t> stage_layers;  // empty: even
};

std::vector<std::pair<std::string, std::string>> settings(const PlanCandidate& c) {
  const workloads::Strategy& s = c.strategy;
  std::vector<std::pair<std::string, std::string>> out = {
      {"tp", std::to_string(s.tp)}, {"pp", std::to_string(s.pp)}, {"micro-batch", std::to_string(s.micro_batch)},
      {"global-batch", std::to_string(s.global_batch)}, {"schedule", workloads::to_string(s.schedule)},
      {"vpp", std::to_string(s.vpp)}, {"rank-order", rank_order_text(s.rank_order)}};
  if (!c.strategy.extra_warmup.empty()) {
    std::string list;
    for (int64_t n : c.strategy.extra_warmup) list += (list.empty() ? "" : ",") + std::to_string(n);
    out.emplace_back("extra-warmup", list);
  }
  if (!c.stage_layers.empty()) {
    std::string list;
    for (int64_t n : c.stage_layers) list += (list.empty() ? "" : ",") + std::to_string(n);
    out.emplace_back("stage-layers", list);
  }
  return out;
}

SweepRun run_of(const PlanCandidate& c, const std::vector<std::string>& base) {
  SweepRun run;
  run.name = c.name;
  run.parameters = settings(c);
  run.args = base;
  for (const auto& [k, v] : run.parameters) run.args.push_back("--" + k + "=" + v);
  return run;
}

// Per-unit seconds from the trace of the uniform plan, on the first rank of each unit's stage.
UnitCosts measure(const std::string& trace_path, const workloads::ModelSpec& m, const workloads::ResolvedStrategy& r) {
  std::ifstream in(trace_path);
  const json trace = json::parse(in);
  UnitCosts c;
  c.layer.assign(size_t(m.layers), 0.0);
  const int per_stage = r.world / r.s.pp;
  const int64_t per_layer_stage = m.layers / r.s.pp;
  for (const json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    if (cat == "send" || cat == "recv") continue;
    const int pid = e.value("pid", -1);
    const double s = e.value("dur", 0.0) * 1e-6;
    if (name.rfind("layer", 0) == 0) {
      const int64_t l = std::atoll(name.c_str() + 5);
      if (l >= 0 && l < m.layers && pid == int(l / per_layer_stage) * per_stage) c.layer[size_t(l)] += s;
    } else if (name.rfind("embedding.", 0) == 0 && pid == 0) {
      c.embedding += s;
    } else if (name.rfind("output.", 0) == 0 && pid == (r.s.pp - 1) * per_stage) {
      c.output += s;
    }
  }
  return c;
}

struct Plan {
  std::vector<PlanCandidate> candidates;  // [0] the uniform 1F1B baseline
  UnitCosts costs;
  Placement placement;
  std::vector<int64_t> layers;
};

// The planned candidates from the measured costs: the best placement with its partition, under
// 1F1B and (when the micro-batches allow) interleaved with two chunks per stage.
void plan_candidates(Plan& plan, const workloads::ResolvedStrategy& r, const platforms::RoutedTopology& topology,
                     const workloads::ModelSpec& m) {
  const double eb = workloads::dtype_bytes(r.s.dtype);
  const double activation = double(r.s.micro_batch) * double(m.seq_length) * double(m.hidden) * eb / r.s.cp;
  const double gradients = workloads::total_parameters(m) / r.s.pp / r.s.tp * workloads::dtype_bytes(r.s.grad_dtype);
  double best = 0;
  for (const Placement& p : placements(r, topology, activation, r.micro_batches, gradients)) {
    const std::vector<int64_t> layers = partition_layers(plan.costs, r.s.pp, p.boundary);
    const double estimate = slowest_stage(plan.costs, layers, p.boundary) * double(r.micro_batches + r.s.pp - 1) /
                                double(r.micro_batches) + p.data_parallel_s;
    if (plan.layers.empty() || estimate < best) best = estimate, plan.placement = p, plan.layers = layers;
  }
  PlanCandidate planned{"planned 1f1b", plan.candidates[0].strategy, plan.layers};
  planned.strategy.rank_order = plan.placement.order;
  plan.candidates.push_back(planned);
  if (plan.placement.order != plan.candidates[0].strategy.rank_order) {
    PlanCandidate even = planned;
    even.name = "uniform 1f1b, planned placement";
    even.stage_layers.clear();
    plan.candidates.push_back(even);
  }
  // Deeper warm-up ahead of slow boundaries: stage k runs ahead by the transfers after it, in
  // units of the slowest stage's time per micro-batch (non-increasing along the pipeline).
  const double slowest = slowest_stage(plan.costs, plan.layers, plan.placement.boundary);
  std::vector<int64_t> extra(size_t(r.s.pp), 0);
  for (int k = r.s.pp - 2; k >= 0; --k)
    extra[size_t(k)] = std::max(extra[size_t(k + 1)],
                                int64_t(std::ceil(plan.placement.boundary[size_t(k)] / 2 / slowest)));
  if (extra.front() > 0) {
    PlanCandidate deeper = planned;
    deeper.name = "planned 1f1b, deeper warm-up";
    deeper.strategy.extra_warmup = extra;
    plan.candidates.push_back(deeper);
  }
  for (int chunks : {2, 4}) {
    if (r.micro_batches % r.s.pp != 0 ||
        !std::all_of(plan.layers.begin(), plan.layers.end(), [&](int64_t n) { return n >= chunks; }))
      continue;
    PlanCandidate inter = planned;
    inter.name = "planned interleaved x" + std::to_string(chunks);
    inter.strategy.schedule = workloads::Schedule::Interleaved;
    inter.strategy.vpp = chunks;
    inter.stage_layers = interleave(plan.layers, chunks);
    plan.candidates.push_back(inter);
  }
}

std::string plan_yaml(const PlanCandidate& c, const PlanSettings& s, const platforms::PlatformConfig& p,
                      double baseline_s, double planned_s) {
  std::ostringstream y;
  char gain[160];
  std::snprintf(gain, sizeof gain, "# simulated (flow): %.3f ms per iteration against %.3f ms for a uniform 1F1B plan, %+.1f%%\n",
                planned_s * 1e3, baseline_s * 1e3, 100.0 * (baseline_s / planned_s - 1));
  y << "# tessera plan: " << s.model << " on " << p.nodes << " x " << p.name << " (" << c.name << ")\n" << gain
    << "# tessera run --model " << s.model << " --platform " << s.platform.platform << " --strategy THIS_FILE\n";
  for (const auto& [k, v] : settings(c)) {
    if (k == "stage-layers" || k == "extra-warmup") y << k << ": [" << v << "]\n";
    else y << k << ": " << v << "\n";
  }
  return y.str();
}

// The uniform 1F1B plan every candidate is measured against, resolved on the platform.
PlanCandidate uniform_plan(const PlanSettings& s, const platforms::PlatformConfig& p, const workloads::ModelSpec& m) {
  const workloads::Framework framework = load_framework_option(s.compute);
  PlanCandidate base{"uniform 1f1b", workloads::default_strategy(m, &framework), {}};
  workloads::Strategy& st = base.strategy;
  st.tp = s.tp, st.pp = s.pp > 0 ? s.pp : p.node.gpus, st.micro_batch = s.micro_batch, st.dp = 0;
  st.schedule = workloads::Schedule::OneFOneB, st.vpp = 1;
  st.stage_layers.clear();
  st.extra_warmup.clear();
  st.first_stage_layers = st.last_stage_layers = 0;
  st.rank_order = workloads::Strategy{}.rank_order;  // pp slowest, as measure() reads the trace
  const int dp = p.gpu_count() / std::max(1, st.tp * st.pp);
  st.global_batch = s.global_batch > 0 ? s.global_batch : int64_t(dp) * s.micro_batch * 4 * st.pp;
  return base;
}

// Simulates the uniform plan with a trace and measures its units' times.
SweepResult profile(Plan& plan, const std::vector<std::string>& args, const workloads::ModelSpec& m,
                    const workloads::ResolvedStrategy& r, const SweepOptions& options, const RankGroup& ranks) {
  char scratch[] = "/tmp/tessera-plan-XXXXXX";
  if (mkdtemp(scratch) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
  const std::string trace = std::string(scratch) + "/uniform.trace.json";
  SweepRun run = run_of(plan.candidates[0], args);
  run.args.insert(run.args.end(), {"--trace", trace, "--trace-bucket-us", "1e9"});
  const SweepResult baseline = run_sweep({run}, options, ranks).rows[0];
  if (baseline.ok()) plan.costs = measure(trace, m, r);
  std::filesystem::remove_all(scratch);
  if (!baseline.ok()) throw InputError("the uniform plan does not run: " + baseline.error);
  return baseline;
}

void print_candidates(std::ostream& out, const Plan& plan, const std::vector<SweepResult>& results, size_t best) {
  const double baseline = results[0].iteration_time_s;
  for (size_t i = 0; i < results.size(); ++i) {
    char line[200];
    const SweepResult& row = results[i];
    if (row.ok())
      std::snprintf(line, sizeof line, "  %-40s %10.3f ms  %+6.1f%%%s\n", plan.candidates[i].name.c_str(),
                    row.iteration_time_s * 1e3, 100.0 * (baseline / row.iteration_time_s - 1), i == best ? "  <- plan" : "");
    else
      std::snprintf(line, sizeof line, "  %-40s %s: %s\n", plan.candidates[i].name.c_str(), row.status.c_str(), row.error.c_str());
    out << line;
  }
  std::string layers;
  for (int64_t n : plan.layers) layers += (layers.empty() ? "" : ",") + std::to_string(n);
  char gain[40];
  std::snprintf(gain, sizeof gain, "%+.1f%%\n", 100.0 * (baseline / results[best].iteration_time_s - 1));
  out << "plan: " << plan.candidates[best].name << ", layers per stage " << layers << ", rank order "
      << rank_order_text(plan.candidates[best].strategy.rank_order) << "; simulated gain over uniform 1F1B " << gain;
}

ordered_json plan_json(const PlanSettings& s, const platforms::PlatformConfig& p, const Plan& plan,
                       const std::vector<SweepResult>& results, size_t best, const std::vector<std::string>& args) {
  ordered_json j = {{"model", s.model}, {"platform", p.name}, {"gpus", p.gpu_count()}};
  j["layer_seconds"] = plan.costs.layer;
  j["embedding_seconds"] = plan.costs.embedding;
  j["output_seconds"] = plan.costs.output;
  j["boundary_seconds"] = plan.placement.boundary;
  j["candidates"] = ordered_json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    ordered_json c = {{"name", plan.candidates[i].name}, {"command", run_command(run_of(plan.candidates[i], args))}};
    c.update(results[i].to_json());
    j["candidates"].push_back(c);
  }
  j["plan"] = plan.candidates[best].name;
  j["gain"] = results[0].iteration_time_s / results[best].iteration_time_s - 1;
  return j;
}

int lead(const PlanSettings& s, const po::variables_map& vm, const RankGroup& ranks, std::ostream& out) {
  const platforms::PlatformConfig p = build_platform(s.platform);
  const platforms::RoutedTopology topology(p);
  const workloads::ModelSpec m = workloads::load_model(s.model);
  if (m.is_generic()) throw InputError("--model: " + s.model + " is a generic layer list; plan partitions transformer layers");
  Plan plan;
  plan.candidates.push_back(uniform_plan(s, p, m));
  const workloads::ResolvedStrategy r = workloads::resolve(m, plan.candidates[0].strategy, p.gpu_count());
  out << "tessera plan: " << s.model << " on " << p.nodes << " x " << p.name << " (" << p.gpu_count() << " GPUs), pp "
      << r.s.pp << ", tp " << r.s.tp << ", dp " << r.s.dp << ", " << r.micro_batches << " micro-batches\n";
  out.flush();
  const std::vector<std::string> args = base_args(s, vm);
  SweepOptions options;
  options.jobs = s.jobs;
  std::vector<SweepResult> results = {profile(plan, args, m, r, options, ranks)};
  plan_candidates(plan, r, topology, m);
  std::vector<SweepRun> runs;
  for (size_t i = 1; i < plan.candidates.size(); ++i) runs.push_back(run_of(plan.candidates[i], args));
  for (SweepResult& row : run_sweep(runs, options, ranks).rows) results.push_back(row);
  size_t best = 0;
  for (size_t i = 1; i < results.size(); ++i)
    if (results[i].ok() && results[i].iteration_time_s < results[best].iteration_time_s) best = i;
  print_candidates(out, plan, results, best);
  if (!s.out.empty())
    write_output(s.out, plan_yaml(plan.candidates[best], s, p, results[0].iteration_time_s, results[best].iteration_time_s));
  if (!s.report.empty()) write_json_file(s.report, plan_json(s, p, plan, results, best, args));
  return 0;
}

}  // namespace

int command_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  PlanSettings s;
  po::variables_map vm;
  if (!parse_command_options(args, plan_options(s), out, vm)) return 0;
  check_option("--tp", double(s.tp), limits::integers(1, limits::kMaxGpus));
  if (vm.count("pp")) check_option("--pp", double(s.pp), limits::integers(2, limits::kMaxGpus));
  check_option("--micro-batch", double(s.micro_batch), limits::integers(1, limits::kMaxModelDimension));
  if (vm.count("global-batch"))
    check_option("--global-batch", double(s.global_batch), limits::integers(1, limits::kMaxModelDimension));
  check_option("--jobs", double(s.jobs), limits::integers(1, 256));
  check_output_paths({{"--out", s.out}, {"--report", s.report}});
  const RankGroup ranks;
  if (ranks.size() > 1) throw InputError("tessera plan runs on one machine (not under mpirun)");
  return lead(s, vm, ranks, out);
}

}  // namespace tessera::app
