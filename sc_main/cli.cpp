#include "sc_main/cli.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <systemc>

#include "sc_main/analyze_command.h"
#include "sc_main/calibrate_command.h"
#include "sc_main/collective_command.h"
#include "sc_main/compute_command.h"
#include "sc_main/compute_options.h"
#include "sc_main/validate_command.h"
#include "sc_main/fidelity_choice.h"
#include "sc_main/input_error.h"
#include "sc_main/huge_pages.h"
#include "platforms/platform_file.h"
#include "sc_main/describe_command.h"
#include "sc_main/job_file.h"
#include "sc_main/output_file.h"
#include "models/rtl/contract.h"
#include "sc_main/platform_options.h"
#include "sc_main/reference_run.h"
#include "sc_main/report.h"
#include "sc_main/simulation.h"
#include "sc_main/plan_command.h"
#include "sc_main/search_command.h"
#include "sc_main/sweep_command.h"
#include "sc_main/watchdog.h"
#include "tlm/sockets.h"
#include "tlm/time_span.h"
#include "workloads/workload.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

const char* kUsage =
    "usage: tessera <command> [options]\n"
    "\n"
    "tessera simulates distributed DNN training on GPU clusters (SystemC/TLM-2.0).\n"
    "\n"
    "commands:\n"
    "  run         simulate one training iteration (the default scenario without options)\n"
    "  collective  one collective over a size sweep, printed like nccl-tests\n"
    "  analyze     the analytic model's sensitivity to each hardware parameter (--sensitivity)\n"
    "  validate    simulate measured runs (a CSV) and report each error and the MAPE\n"
    "  platforms   list the built-in platforms\n"
    "  describe    a platform's modules, links, bisection bandwidth and a route between two GPUs\n"
    "  models      list the model zoo\n"
    "  calibrate   measured kernel times from profiler traces (Kineto) into a calibration file\n"
    "  compute     the compute model's time for GEMM shapes, against measured GEMMs\n"
    "  plan        a pipeline plan (partition, placement, schedule) for unevenly connected GPUs\n"
    "  search      the fastest strategies of a model on a platform (enumerated, pruned, simulated)\n"
    "  sweep       many runs from a sweep file (a grid and/or a list), in parallel and over MPI\n"
    "\n"
    "options:\n"
    "  -h, --help  this help; 'tessera <command> --help' for a command's options\n"
    "  --version   print the version\n";

// A link counter bucket of at least 100 ns (a 128 KiB chunk crosses
// a 450 GB/s NVLink in 290 ns; finer buckets only cost memory, docs/limits.md).
constexpr double kMinTraceBucketUs = 0.1, kMaxTraceBucketUs = 1e12;
// Iterations of one run: a million iterations of a 10 ms step is 2.8 simulated hours.
constexpr int64_t kMaxIterations = 1000000;

struct RunSettings {
  std::string config, report, trace, job, vcd;
  std::string report_detail = "full";
  bool rtl_reference = true;
  PlatformSettings platform;
  ComputeSettings compute;
  std::string model = "gpt3-1.3b", strategy_file;
  bool allow_oom = false;
  int64_t chunk_kib = 128;
  std::string collective_algorithm = "auto", collective_protocol = "auto";
  std::string fidelity = "auto";
  std::string symmetry = "on";
  int64_t gpus_per_node = 0;
  int64_t iterations = 1;
  double trace_bucket_us = 10.0;
  bool quiet = false;
  WatchdogSettings watchdog;
};

po::options_description run_options(RunSettings& s, const char* title = "tessera run [options]") {
  po::options_description general("general");
  general.add_options()
      ("help,h", "this help")
      ("config", po::value(&s.config), "read options from FILE (lines 'key = value', keys are the long option names)")
      ("report", po::value(&s.report), "write the report as JSON to FILE")
      ("report-detail", po::value(&s.report_detail)->default_value("full"), "what the report holds: full (every rank and link too) or summary (the iteration and the means over ranks)")
      ("trace", po::value(&s.trace), "write a Chrome/Perfetto trace to FILE")
      ("trace-bucket-us", po::value(&s.trace_bucket_us)->default_value(10.0), "link counter resolution in the trace, microseconds")
      ("vcd", po::value(&s.vcd), "write the RTL blocks' pins and their ports' signals as a VCD waveform to FILE (GTKWave; docs/cosim.md)")
      ("rtl-reference", po::value(&s.rtl_reference)->default_value(true), "with RTL blocks, also run without them (in a child process first) to report what co-simulation costs; false: do not")
      ("quiet,q", po::bool_switch(&s.quiet), "no summary on stdout");
  po::options_description platform = platform_options(s.platform);
  po::options_description workload("workload");
  workload.add_options()
      ("model", po::value(&s.model)->default_value("gpt3-1.3b"), "model: a zoo name (see 'tessera models') or a YAML file")
      ("strategy", po::value(&s.strategy_file), "strategy YAML file (the keys of the strategy options below; a strategy tree)")
      ("job", po::value(&s.job), "run the per-rank programs of a job file (YAML/JSON) instead of a model")
      ("allow-oom", po::bool_switch(&s.allow_oom), "simulate even when a rank needs more memory than its HBM");
  po::options_description model("model overrides");
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    model.add_options()(o.name.c_str(), po::value<std::string>(), o.help.c_str());
  po::options_description strategy("strategy");
  for (const workloads::OptionInfo& o : workloads::strategy_options()) {
    if (o.is_switch)
      strategy.add_options()(o.name.c_str(), po::value<std::string>()->implicit_value("true"), o.help.c_str());
    else
      strategy.add_options()(o.name.c_str(), po::value<std::string>(), o.help.c_str());
  }
  workload.add(model).add(strategy);
  po::options_description sim("simulation");
  sim.add_options()
      ("fidelity", po::value(&s.fidelity)->default_value("auto"),
       "packet (every chunk through every port and switch), flow (one max-min fair flow per transfer; large systems), analytic (no simulation: the programs costed op by op; docs/analytic.md) or auto (packet up to 64 GPUs, flow above); docs/fidelity.md")
      ("symmetry", po::value(&s.symmetry)->default_value("on"),
       "on: where groups of GPUs do the same work (data-parallel replicas, tensor-parallel peers), simulate one group and let the others replay its communication, checked as it runs (a run where they drift apart is made again with off); off: simulate every GPU's program (docs/fidelity.md, Symmetry)")
      ("chunk-kib", po::value(&s.chunk_kib)->default_value(128), "fabric chunk size, KiB")
      ("collective-algorithm", po::value(&s.collective_algorithm)->default_value("auto"),
       "ring, tree, direct, halving-doubling, hierarchical, nvls, collnet, nvls_tree or auto (the tuner); used where it applies, an op's own algorithm wins")
      ("collective-protocol", po::value(&s.collective_protocol)->default_value("auto"), "simple, ll, ll128 or auto")
      ("gpus-per-node", po::value(&s.gpus_per_node), "GPUs per node for hierarchical and tree collectives (default: all)")
      ("iterations", po::value(&s.iterations)->default_value(1),
       "training iterations to simulate, one after another on every rank; times are reported as the mean of one");
  po::options_description all(title);
  all.add(general).add(platform).add(workload).add(compute_options(s.compute)).add(sim).add(watchdog_options(s.watchdog));
  return all;
}

// Model and strategy values are text until the workload library reads them: reads one as the
// run would (workloads::InputError on a bad value).
void check_workload_option(const std::string& key, const std::string& value) {
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    if (o.name == key) {
      workloads::ModelOverrides scratch;
      workloads::set_model_override(scratch, key, value);
    }
  for (const workloads::OptionInfo& o : workloads::strategy_options())
    if (o.name == key) {
      workloads::Strategy scratch;
      workloads::set_strategy_option(scratch, key, value);
    }
}

// The same where the file and line are known.
void check_workload_value(const std::string& key, const std::string& value,
                          const std::string& path, int line) {
  try {
    check_workload_option(key, value);
  } catch (const workloads::InputError& e) {
    throw input_error(path, line, key, e.what());
  }
}

// Where a config file set each option: key -> line.
using ConfigLines = std::map<std::string, int>;

// Reads a config file of 'key = value' lines; names file, line and key on any problem.
ConfigLines read_config_file(const std::string& path, const po::options_description& desc,
                             po::variables_map& vm) {
  require_input_file(path, "config file");
  std::ifstream in(path);
  std::string line;
  int number = 0;
  std::vector<std::pair<std::string, int>> keys;
  std::ostringstream cleaned;
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
      cleaned << "\n";
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw input_error(path, number, "", "expected 'key = value', got '" + line.substr(first) + "'");
    std::string key = line.substr(0, eq);
    key.erase(0, key.find_first_not_of(" \t"));
    key.erase(key.find_last_not_of(" \t") + 1);
    std::string value = line.substr(eq + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r") + 1);
    if (key.empty()) throw input_error(path, number, "", "missing key before '='");
    if (key == "config") throw input_error(path, number, key, "a config file cannot include another");
    const po::option_description* option = desc.find_nothrow(key, false);
    if (option == nullptr || key == "help") throw input_error(path, number, key, "unknown key");
    if (value.empty() && option->semantic()->max_tokens() > 0)
      throw input_error(path, number, key, "missing value");
    keys.emplace_back(key, number);
    check_workload_value(key, value, path, number);
    cleaned << key << "=" << value << "\n";
  }
  std::istringstream text(cleaned.str());
  try {
    po::store(po::parse_config_file(text, desc), vm);
  } catch (po::error_with_option_name& e) {
    std::string key = e.get_option_name();
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    int at = 0;
    for (const auto& k : keys)
      if (k.first == key) at = k.second;
    throw input_error(path, at, key, option_error_message(e));
  } catch (po::error& e) {
    throw InputError(path + ": " + option_error_message(e));
  }
  ConfigLines lines;
  for (const auto& [key, at] : keys) lines[key] = at;
  return lines;
}

// An error about option --KEY whose value came from the config file (not the command line)
// names the file, line and key instead: "run.cfg:3: key 'nodes': must be ...".
std::string with_config_source(const std::string& message, const std::string& path,
                               const ConfigLines& lines, const std::vector<std::string>& args) {
  for (const auto& [key, at] : lines) {
    const std::string option = "--" + key;
    if (message.rfind(option, 0) != 0 || message.size() == option.size()) continue;
    const char next = message[option.size()];
    if (next != ':' && next != ' ') continue;
    for (const std::string& a : args)
      if (a == option || a.rfind(option + "=", 0) == 0) return message;  // the command line's value
    std::string rest = message.substr(option.size());
    rest.erase(0, rest.find_first_not_of(": "));
    return input_error(path, at, key, rest).what();
  }
  return message;
}

// Options a job file's own programs leave nothing to do for.
std::vector<std::string> model_option_names() {
  std::vector<std::string> names{"model", "strategy", "allow-oom"};
  for (const workloads::OptionInfo& o : workloads::model_override_options()) names.push_back(o.name);
  for (const workloads::OptionInfo& o : workloads::strategy_options()) names.push_back(o.name);
  return names;
}

void check_run_settings(const RunSettings& s, const po::variables_map& vm) {
  check_option("--chunk-kib", double(s.chunk_kib), limits::integers(1, limits::kMaxChunkKib));
  check_watchdog_settings(s.watchdog);
  check_option("--iterations", double(s.iterations), limits::integers(1, kMaxIterations));
  if (s.symmetry != "on" && s.symmetry != "off")
    throw InputError("--symmetry: '" + s.symmetry + "' is not on or off");
  if (s.report_detail != "full" && s.report_detail != "summary")
    throw InputError("--report-detail: '" + s.report_detail + "' is not full or summary");
  check_option("--trace-bucket-us", s.trace_bucket_us, limits::Range{kMinTraceBucketUs, kMaxTraceBucketUs});
  if (vm.count("gpus-per-node"))
    check_option("--gpus-per-node", double(s.gpus_per_node), limits::integers(1, limits::kMaxGpusPerNode));
  if (s.job.empty()) return;
  for (const std::string& name : model_option_names())
    if (vm.count(name) && !vm[name].defaulted())
      throw InputError("--" + name + ": does not apply to --job " + s.job +
                       " (a job file holds its own per-rank programs; leave out the model and strategy options)");
}

// Ops of every rank's program.
uint64_t op_count(const workloads::Job& job) {
  uint64_t ops = 0;
  for (const workloads::Rank& r : job.ranks) ops += r.program ? r.program->ops.size() : 0;
  return ops;
}

struct Workload {
  workloads::Job job;
  std::vector<workloads::MemoryBreakdown> memory;  // per rank; empty for a job file
  analytic::WorkloadSymbols symbols;                // empty for a job file
};

Workload build_workload(const RunSettings& s, const po::variables_map& vm,
                        const platforms::PlatformConfig& p) {
  if (!s.job.empty()) {
    require_input_file(s.job, "job file");
    return {load_job_file(s.job), {}, {}};
  }
  workloads::ModelSpec model = workloads::load_model(s.model);
  workloads::ModelOverrides overrides;
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    if (vm.count(o.name)) workloads::set_model_override(overrides, o.name, vm[o.name].as<std::string>());
  workloads::apply_overrides(model, overrides);
  const workloads::Framework framework = load_framework_option(s.compute);
  workloads::Strategy strategy = workloads::default_strategy(model, &framework);
  if (!s.strategy_file.empty()) {
    require_input_file(s.strategy_file, "strategy file");
    workloads::apply_strategy_file(strategy, s.strategy_file);
  }
  for (const workloads::OptionInfo& o : workloads::strategy_options())
    if (vm.count(o.name)) workloads::set_strategy_option(strategy, o.name, vm[o.name].as<std::string>());
  workloads::CompiledJob compiled = workloads::compile(model, strategy, p.gpu_count(), framework);
  if (!s.allow_oom) workloads::check_memory(compiled, p.gpu.hbm_capacity_gib * 1024.0 * 1024.0 * 1024.0);
  const workloads::ResolvedStrategy& r = compiled.strategy;
  analytic::WorkloadSymbols symbols = analytic::workload_symbols(model, r);
  return {std::move(compiled.job), std::move(compiled.memory), std::move(symbols)};
}

// Where a run's --config file set its options ("" when there is none).
struct ConfigSource {
  std::string path;
  ConfigLines lines;
};

// Runs `body`; an input error about an option that the config file set (and the command line
// did not) names the file, line and key instead of the option.
int naming_config_source(const ConfigSource& config, const std::vector<std::string>& args,
                         const std::function<int()>& body) {
  if (config.path.empty()) return body();
  try {
    return body();
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const InputError*>(&e) == nullptr && dynamic_cast<const workloads::InputError*>(&e) == nullptr)
      throw;
    const std::string message = with_config_source(e.what(), config.path, config.lines, args);
    if (message == e.what()) throw;
    throw InputError(message);
  }
}

// Parses a run's command line (and its --config file); false after --help.
bool parse_run(const std::vector<std::string>& args, po::options_description& desc, po::variables_map& vm,
               std::ostream& out, ConfigSource& config) {
  store_command_line(args, desc, vm);
  if (vm.count("help")) {
    out << desc << "\n";
    return false;
  }
  if (vm.count("config")) {
    config.path = vm["config"].as<std::string>();
    config.lines = read_config_file(config.path, desc, vm);
  }
  try {
    po::notify(vm);
  } catch (po::error& e) {
    throw InputError(option_error_message(e));
  }
  return true;
}

// The platform (and its routes) and the workload of a run, checked against each other.
Workload prepare_run(RunSettings& s, const po::variables_map& vm, platforms::PlatformConfig& platform,
                     std::shared_ptr<const platforms::RoutedTopology>& topology) {
  platform = build_platform(s.platform, &topology);
  Workload workload = build_workload(s, vm, platform);
  workloads::Job& job = workload.job;
  if (!s.job.empty() && vm.count("gpus") == 0 && vm.count("nodes") == 0 && platform.nodes == 1 &&
      static_cast<size_t>(platform.gpu_count()) != job.ranks.size()) {
    // A job file sizes a one-node platform: as many GPUs as ranks, the PCIe switches sharing
    // them evenly.
    const int gpus = static_cast<int>(job.ranks.size());
    s.platform.gpus = gpus;
    s.platform.sets.push_back("node.pcie.switches=" + std::to_string(std::gcd(gpus, platform.node.pcie.switches)));
    platform = build_platform(s.platform, &topology);
  }
  if (static_cast<size_t>(platform.gpu_count()) != job.ranks.size())
    throw InputError("the job has " + std::to_string(job.ranks.size()) + " ranks but the platform has " +
                     std::to_string(platform.gpu_count()) + " GPUs (--nodes x --gpus)");
  try {
    workloads::validate(job);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  return workload;
}

// The simulation options of a run (not its kernel timer).
SimulationOptions simulation_options(const RunSettings& s, const po::variables_map& vm,
                                     const platforms::PlatformConfig& platform, const workloads::Job& job) {
  SimulationOptions options;
  options.chunk_bytes = uint64_t(s.chunk_kib) * 1024;
  if (s.fidelity == "auto") {
    FidelityChoice choice = choose_fidelity(platform, job, options.chunk_bytes, uint64_t(s.iterations));
    options.fidelity = choice.fidelity;
    options.fidelity_reason = std::move(choice.reason);
  } else if (!platforms::parse_fidelity(s.fidelity, options.fidelity)) {
    throw InputError("--fidelity: unknown fidelity '" + s.fidelity + "' (packet, flow, analytic or auto)");
  }
  if (options.fidelity == platforms::Fidelity::Analytic && s.iterations > 1)
    throw InputError("--iterations " + std::to_string(s.iterations) +
                     ": analytic fidelity costs one iteration (every iteration is the same); leave --iterations out");
  if (options.fidelity != platforms::Fidelity::Packet && platform.uses_rtl())
    throw InputError("--fidelity " + s.fidelity + ": the platform has RTL blocks at ports, which only packet fidelity has (use packet)");
  if (!s.vcd.empty() && !platform.uses_rtl())
    throw InputError("--vcd: the run has no RTL block to trace (--rtl-arbiter, or an `arbiter: rtl` in the platform file; docs/cosim.md)");
  if (!models::parse_algorithm(s.collective_algorithm, options.collectives.algorithm))
    throw InputError("--collective-algorithm: unknown algorithm '" + s.collective_algorithm + "'");
  if (!models::parse_protocol(s.collective_protocol, options.collectives.protocol))
    throw InputError("--collective-protocol: unknown protocol '" + s.collective_protocol + "'");
  if (vm.count("gpus-per-node")) {
    if (s.gpus_per_node <= 0 || platform.gpu_count() % s.gpus_per_node != 0)
      throw InputError("--gpus-per-node must divide the " + std::to_string(platform.gpu_count()) + " GPUs");
    options.collectives.gpus_per_node = int(s.gpus_per_node);
  }
  options.trace = !s.trace.empty();
  options.trace_bucket_us = s.trace_bucket_us;
  options.progress = true;
  options.iterations = uint64_t(s.iterations);
  options.symmetry = s.symmetry == "on";
  return options;
}

// A run's job, kept until the process ends, whose exit returns its memory at once: freeing a
// large job op by op costs as much as a tenth of its analytic run (Megatron 1T on 3,072 GPUs:
// 2.8 M ops, 0.05 s). A later run in the same process frees the one before.
void keep_until_exit(Workload&& workload) {
  static Workload* kept = nullptr;
  delete kept;
  kept = new Workload(std::move(workload));
}

// `tessera run` once its options are read: checks, builds, simulates and reports.
int run_parsed(RunSettings& s, const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  check_run_settings(s, vm);
  check_output_paths({{"--report", s.report}, {"--trace", s.trace}, {"--vcd", s.vcd}},
                     {{"--config", s.config}, {"--platform", s.platform.platform}, {"--model", s.model},
                      {"--strategy", s.strategy_file}, {"--job", s.job}, {"--calibration", s.compute.calibration},
                      {"--framework", s.compute.framework}});

  std::shared_ptr<const platforms::RoutedTopology> topology;
  platforms::PlatformConfig platform;
  Workload workload = prepare_run(s, vm, platform, topology);
  if (s.fidelity != "analytic" && rerun_with_huge_pages(platform.gpu_count())) return kRerunWithHugePages;
  const workloads::Job& job = workload.job;
  SimulationOptions options = simulation_options(s, vm, platform, job);
  options.topology = topology;
  options.vcd = s.vcd;
  std::string compute_note;
  options.kernel_timer = make_kernel_timer(s.compute, platform, load_framework_option(s.compute), &compute_note);
  if (!compute_note.empty() && !s.quiet) err << "tessera: note: " << compute_note << "\n";
  const SimulationResult result = [&] {
    const Watchdog watchdog(s.watchdog, expected_memory_bytes(platform.nodes, op_count(job)));
    if (options.fidelity == platforms::Fidelity::Analytic) return cost_analytically(platform, *topology, job, options);
    ReferenceRun reference;
    if (platform.uses_rtl() && s.rtl_reference) {
      reference = run_without_rtl(platform, job, options);
      if (!reference.ok && !s.quiet) err << "tessera: note: " << reference.error << "; no co-simulation cost to report\n";
    }
    SimulationResult r = simulate(platform, job, options);
    r.has_reference = reference.ok;
    r.reference_wall_s = reference.wall_s;
    r.reference_iteration_time_s = reference.iteration_time_s;
    return r;
  }();
  if (result.deadlocked) {
    err << "tessera: error: " << describe_deadlock(result) << "\n";
    return kDeadlock;
  }
  if (!s.report.empty())
    write_report(s.report, platform, job, workload.memory, result,
                 s.report_detail == "full" ? ReportDetail::Full : ReportDetail::Summary);
  if (!s.trace.empty()) write_json_file(s.trace, trace_json(platform, job, result, s.trace_bucket_us));
  if (!s.quiet) print_summary(out, platform, job, workload.memory, result);
  keep_until_exit(std::move(workload));
  return kOk;
}

int command_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunSettings s;
  po::options_description desc = run_options(s);
  po::variables_map vm;
  ConfigSource config;
  if (!parse_run(args, desc, vm, out, config)) return kOk;
  return naming_config_source(config, args, [&] { return run_parsed(s, vm, out, err); });
}

// The options of `tessera analyze` that `tessera run` does not have (left out of the flow runs
// of --confirm), and whether each takes a value.
const std::vector<std::pair<std::string, bool>> kAnalyzeOnly = {
    {"sensitivity", false}, {"confirm", false}, {"step", true}, {"symbolic", false}};

// The analyze command line as a `tessera run` one: the analysis options left out.
std::vector<std::string> run_arguments(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const auto& [name, takes_value] : kAnalyzeOnly) {
      const std::string flag = "--" + name;
      if (a == flag) {
        dropped = true;
        if (takes_value) ++i;
      } else if (a.rfind(flag + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

int analyze_parsed(RunSettings& s, const AnalyzeSettings& a, const po::variables_map& vm,
                   const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

int command_analyze(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunSettings s;
  AnalyzeSettings a;
  po::options_description desc = run_options(s, "tessera analyze [options]");
  desc.add(analyze_options(a));
  po::variables_map vm;
  ConfigSource config;
  if (!parse_run(args, desc, vm, out, config)) return kOk;
  return naming_config_source(config, args, [&] { return analyze_parsed(s, a, vm, args, out, err); });
}

// `tessera analyze` once its options are read.
int analyze_parsed(RunSettings& s, const AnalyzeSettings& a, const po::variables_map& vm,
                   const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  check_run_settings(s, vm);
  check_analyze_settings(a);
  for (const char* name : {"report", "report-detail", "trace", "trace-bucket-us", "fidelity", "iterations", "quiet"})
    if (vm.count(name) && !vm[name].defaulted())
      throw InputError(std::string("--") + name + ": does not apply to tessera analyze (it costs the analytic model and prints its analyses)");
  std::shared_ptr<const platforms::RoutedTopology> topology;
  platforms::PlatformConfig platform;
  const Workload workload = prepare_run(s, vm, platform, topology);
  s.fidelity = "analytic";
  SimulationOptions options = simulation_options(s, vm, platform, workload.job);
  options.trace = false;
  const workloads::Framework framework = load_framework_option(s.compute);
  // The analytic iteration time of the platform with extra settings.
  const IterationTime iteration = [&](const std::vector<std::string>& settings) {
    PlatformSettings changed = s.platform;
    changed.sets.insert(changed.sets.end(), settings.begin(), settings.end());
    std::shared_ptr<const platforms::RoutedTopology> routes;
    const platforms::PlatformConfig p = build_platform(changed, &routes);
    SimulationOptions o = options;
    o.kernel_timer = make_kernel_timer(s.compute, p, framework);
    const SimulationResult r = cost_analytically(p, *routes, workload.job, o);
    if (r.deadlocked) throw InputError(describe_deadlock(r));
    return r.iteration_time_s;
  };
  const Watchdog watchdog(s.watchdog, expected_memory_bytes(platform.nodes, op_count(workload.job)));
  if (a.symbolic) {
    SimulationOptions o = options;
    o.kernel_timer = make_kernel_timer(s.compute, platform, framework);
    print_symbolic(out, platform, *topology, workload.job, o, workload.symbols);
  }
  if (!a.sensitivity) return kOk;
  return run_analyses(a, platform, workload.job, iteration, run_arguments(args), out, err);
}

// A SystemC report's text on one line.
std::string one_line(const char* text) {
  std::string s = text != nullptr ? text : "";
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// A listing command takes no options but --help.
bool listing_options(const char* usage, const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(usage);
  desc.add_options()("help,h", "this help");
  po::variables_map vm;
  return parse_command_options(args, desc, out, vm);
}

int command_models(const std::vector<std::string>& args, std::ostream& out) {
  if (!listing_options("tessera models: the model zoo", args, out)) return kOk;
  for (const workloads::ZooEntry& m : workloads::list_models())
    out << "  " << m.name << std::string(m.name.size() < 14 ? 14 - m.name.size() : 1, ' ')
        << m.description << "\n";
  return kOk;
}

int command_platforms(const std::vector<std::string>& args, std::ostream& out) {
  if (!listing_options("tessera platforms: the shipped platforms", args, out)) return kOk;
  for (const platforms::PlatformInfo& p : platforms::list_platforms())
    out << "  " << p.name << std::string(p.name.size() < 12 ? 12 - p.name.size() : 1, ' ') << p.description << "\n";
  return kOk;
}

}  // namespace

std::vector<std::string> run_option_args(const std::string& key, const std::string& value) {
  RunSettings s;
  const po::options_description desc = run_options(s);
  const po::option_description* option = desc.find_nothrow(key, false);
  if (option == nullptr || key == "help") throw InputError("not an option of tessera run");
  std::vector<std::string> args;
  if (option->semantic()->max_tokens() == 0) {
    if (value == "true") args = {"--" + key};
    else if (value != "false") throw InputError("expects true or false, got '" + value + "'");
  } else {
    args = {"--" + key + "=" + value};
  }
  po::variables_map vm;
  store_command_line(args, desc, vm);
  try {
    po::notify(vm);
    check_workload_option(key, value);
  } catch (po::error& e) {
    throw InputError(option_error_message(e));
  } catch (const workloads::InputError& e) {
    throw InputError(e.what());
  }
  platforms::Fidelity fidelity;
  if (key == "fidelity" && value != "auto" && !platforms::parse_fidelity(value, fidelity))
    throw InputError("unknown fidelity '" + value + "' (packet, flow or auto)");
  return args;
}

std::vector<std::string> rerun_without_symmetry(int argc, const char* const* argv) {
  std::vector<std::string> args = {argv[0]};
  if (argc == 1) args.push_back("run");
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--symmetry") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--symmetry=", 0) == 0) continue;
    args.push_back(a);
  }
  args.push_back("--symmetry=off");
  return args;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  protocol::set_time_resolution();  // before any platform makes an sc_time
  try {
    if (args.empty()) return command_run({}, out, err);
    const std::string command = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "-h" || command == "--help" || command == "help") {
      out << kUsage;
      return kOk;
    }
    if (command == "--version") {
      out << "tessera 0.1.0 (SystemC " << sc_core::sc_release() << ")\n";
      return kOk;
    }
    if (command == "run") return command_run(rest, out, err);
    if (command == "collective") return command_collective(rest, out, err);
    if (command == "analyze") return command_analyze(rest, out, err);
    if (command == "validate") return command_validate(rest, out, err);
    if (command == "calibrate") return command_calibrate(rest, out, err);
    if (command == "compute") return command_compute(rest, out, err);
    if (command == "platforms") return command_platforms(rest, out);
    if (command == "describe") return command_describe(rest, out);
    if (command == "models") return command_models(rest, out);
    if (command == "sweep") return command_sweep(rest, out, err);
    if (command == "search") return command_search(rest, out, err);
    if (command == "plan") return command_plan(rest, out, err);
    throw InputError("unknown command '" + command + "' (try 'tessera --help')");
  } catch (const InputError& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const CannotFinish& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kDeadlock;
  } catch (const SymmetryBroken& e) {
    err << "tessera: note: the replicas drifted apart (" << e.what() << "); simulating every GPU\n";
    return kRerunWithoutSymmetry;
  } catch (const workloads::InputError& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const workloads::OutOfMemoryError& e) {
    err << "tessera: error: " << e.what() << " (--allow-oom simulates anyway)\n";
    return kOutOfMemory;
  } catch (const OutputError& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kInternalError;
  } catch (const rtl::ContractError& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kRtlContract;
  } catch (const protocol::TimeSpanError& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const sc_core::sc_report& e) {
    err << "tessera: internal error: " << one_line(e.get_msg()) << " (in " << one_line(e.get_process_name()) << ")\n";
    return kInternalError;
  } catch (const std::invalid_argument& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    err << "tessera: error: " << e.what() << "\n";
    return kInternalError;
  }
}

}  // namespace tessera::app
