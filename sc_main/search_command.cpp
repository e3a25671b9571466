#include "sc_main/search_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "platforms/platform_file.h"
#include "sc_main/compute_options.h"
#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "sc_main/report.h"
#include "sc_main/sweep_command.h"
#include "sc_main/sweep_engine.h"
#include "workloads/strategy_space.h"
#include "workloads/workload.h"

namespace po = boost::program_options;
using nlohmann::ordered_json;

namespace tessera::app {

std::string fastest_fidelity() {
  platforms::Fidelity f;
  for (const char* name : {"analytic", "flow"})
    if (platforms::parse_fidelity(name, f)) return name;
  return "flow";
}

namespace {

// Strategy options the search varies (the rest pass through to every run as given).
const char* const kSearched[] = {"dp", "tp", "pp", "cp", "ep", "sequence-parallel", "zero", "micro-batch",
                                 "global-batch", "schedule", "vpp", "recompute", "stage-layers", "extra-warmup",
                                 "first-stage-layers", "last-stage-layers"};
bool searched(const std::string& name) {
  return std::find(std::begin(kSearched), std::end(kSearched), name) != std::end(kSearched);
}

struct SearchSettings {
  PlatformSettings platform;
  ComputeSettings compute;
  std::string model = "gpt3-1.3b";
  std::map<std::string, std::string> lists;  // dimension -> comma list
  int64_t global_batch = 0;
  int top = 8;
  int jobs = 1;
  std::string prune_fidelity, report, csv;
  bool keep_dominated = false;
  std::vector<std::string> passed;  // model overrides and fixed strategy options, as run args
  workloads::SpaceDimensions dims;  // as given (empty lists: the defaults)
};

po::options_description search_options(SearchSettings& s) {
  po::options_description general("tessera search --model M --platform P --nodes N [options]");
  general.add_options()
      ("help,h", "this help")
      ("model", po::value(&s.model)->default_value("gpt3-1.3b"), "model: a zoo name or a YAML file")
      ("global-batch", po::value(&s.global_batch), "samples per iteration, the same for every strategy (default: the GPU count)")
      ("top", po::value(&s.top)->default_value(8), "the best K of the pruning estimate simulated in flow fidelity")
      ("prune-fidelity", po::value(&s.prune_fidelity), "fidelity that ranks every candidate (default: the fastest this build has)")
      ("keep-dominated", po::bool_switch(&s.keep_dominated), "also simulate strategies that recompute more than a twin that fits (never faster)")
      ("jobs,j", po::value(&s.jobs)->default_value(1), "runs at once, each in its own process (per MPI rank)")
      ("report", po::value(&s.report), "write the search (counts, reasons, every ranked candidate) as JSON")
      ("csv", po::value(&s.csv), "write every simulated candidate as a CSV row");
  po::options_description dims("dimensions (comma lists; default: every sensible value)");
  for (const char* d : {"dp", "tp", "pp", "cp", "ep", "micro-batch", "vpp", "zero"})
    dims.add_options()(d, po::value<std::string>(), "values to try");
  dims.add_options()
      ("schedule", po::value<std::string>(), "gpipe, 1f1b, interleaved (default 1f1b,interleaved)")
      ("recompute", po::value<std::string>(), "none, selective, full")
      ("sequence-parallel", po::value<std::string>(), "false, true");
  po::options_description fixed("fixed for every run (as in tessera run)");
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    fixed.add_options()(o.name.c_str(), po::value<std::string>(), o.help.c_str());
  for (const workloads::OptionInfo& o : workloads::strategy_options())
    if (!searched(o.name)) fixed.add_options()(o.name.c_str(), po::value<std::string>(), o.help.c_str());
  general.add(dims).add(fixed).add(platform_options(s.platform)).add(compute_options(s.compute));
  return general;
}

std::vector<std::string> split_list(const std::string& option, const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) throw InputError("--" + option + ": an empty value in '" + text + "'");
    out.push_back(part);
  }
  if (out.empty()) throw InputError("--" + option + ": give at least one value");
  return out;
}

// The dimension lists, each value read as `tessera run --OPTION VALUE` would read it.
workloads::SpaceDimensions read_dimensions(const SearchSettings& s) {
  workloads::SpaceDimensions d;
  for (const auto& [option, text] : s.lists)
    for (const std::string& v : split_list(option, text)) {
      workloads::Strategy t;
      try {
        workloads::set_strategy_option(t, option, v);
      } catch (const workloads::InputError& e) {
        throw InputError(e.what());
      }
      if (option == "dp") d.dp.push_back(t.dp);
      else if (option == "tp") d.tp.push_back(t.tp);
      else if (option == "pp") d.pp.push_back(t.pp);
      else if (option == "cp") d.cp.push_back(t.cp);
      else if (option == "ep") d.ep.push_back(t.ep);
      else if (option == "micro-batch") d.micro_batch.push_back(t.micro_batch);
      else if (option == "vpp") d.vpp.push_back(t.vpp);
      else if (option == "zero") d.zero.push_back(t.zero);
      else if (option == "schedule") d.schedule.push_back(t.schedule);
      else if (option == "recompute") d.recompute.push_back(t.recompute);
      else if (option == "sequence-parallel") d.sequence_parallel.push_back(t.sequence_parallel);
    }
  return d;
}

// The command line's options: false after --help.
bool parse(const std::vector<std::string>& args, SearchSettings& s, std::ostream& out, po::variables_map& vm) {
  const po::options_description desc = search_options(s);
  if (!parse_command_options(args, desc, out, vm)) return false;
  for (const char* d : {"dp", "tp", "pp", "cp", "ep", "micro-batch", "vpp", "zero", "schedule", "recompute", "sequence-parallel"})
    if (vm.count(d)) s.lists[d] = vm[d].as<std::string>();
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    if (vm.count(o.name)) s.passed.push_back("--" + o.name + "=" + vm[o.name].as<std::string>());
  for (const workloads::OptionInfo& o : workloads::strategy_options())
    if (!searched(o.name) && vm.count(o.name)) s.passed.push_back("--" + o.name + "=" + vm[o.name].as<std::string>());
  s.dims = read_dimensions(s);
  s.dims.keep_dominated = s.keep_dominated;
  if (vm.count("global-batch"))
    check_option("--global-batch", double(s.global_batch), limits::integers(1, limits::kMaxModelDimension));
  check_option("--top", double(s.top), limits::integers(1, 10000));
  check_option("--jobs", double(s.jobs), limits::integers(1, 256));
  if (s.prune_fidelity.empty()) s.prune_fidelity = fastest_fidelity();
  platforms::Fidelity f;
  if (!platforms::parse_fidelity(s.prune_fidelity, f))
    throw InputError("--prune-fidelity: unknown fidelity '" + s.prune_fidelity + "'");
  check_output_paths({{"--report", s.report}, {"--csv", s.csv}});
  return true;
}

// The options every run shares: platform, compute model, model and fixed strategy options.
std::vector<std::string> shared_args(const SearchSettings& s, const po::variables_map& vm) {
  std::vector<std::string> a = {"--model=" + s.model, "--platform=" + s.platform.platform};
  for (const char* o : {"nodes", "gpus", "nvlink-bandwidth-gbps", "kernel-overhead-us"})
    if (vm.count(o)) {
      std::ostringstream v;
      if (std::string(o) == "nodes" || std::string(o) == "gpus") v << vm[o].as<int64_t>();
      else v << vm[o].as<double>();
      a.push_back(std::string("--") + o + "=" + v.str());
    }
  for (const std::string& set : s.platform.sets) a.insert(a.end(), {"--set", set});
  a.push_back("--framework=" + s.compute.framework);
  a.push_back("--compute-model=" + s.compute.compute_model);
  if (!s.compute.calibration.empty()) a.push_back("--calibration=" + s.compute.calibration);
  a.insert(a.end(), s.passed.begin(), s.passed.end());
  return a;
}

SweepRun candidate_run(const workloads::Candidate& c, int gpus, const std::vector<std::string>& shared,
                       const std::string& fidelity) {
  SweepRun run;
  const workloads::Strategy& st = c.strategy;
  run.parameters.emplace_back("dp", std::to_string(gpus / (st.tp * st.pp * st.cp)));
  for (const auto& kv : workloads::strategy_settings(st)) run.parameters.push_back(kv);
  run.args = shared;
  for (const auto& [key, value] : run.parameters)
    if (key != "dp") run.args.push_back("--" + key + "=" + value);
  run.args.push_back("--fidelity=" + fidelity);
  return run;
}

// A progress line on a terminal (stderr), nothing elsewhere.
std::function<void(const SweepRun&, const SweepResult&, size_t, size_t, bool)> progress(std::ostream& err,
                                                                                       const std::string& what) {
  const bool terminal = isatty(STDERR_FILENO);
  return [&err, what, terminal](const SweepRun&, const SweepResult&, size_t done, size_t total, bool) {
    if (!terminal) return;
    err << "\r  " << what << " " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
  };
}

struct Ranked {
  size_t candidate;      // index into the kept candidates
  SweepResult result;
  std::string fidelity;
  std::string command;   // the `tessera run` that gave the result
};

// The ok results of `runs`, fastest first (ties in candidate order).
std::vector<Ranked> rank(const std::vector<SweepRun>& runs, const std::vector<SweepResult>& rows,
                         const std::vector<size_t>& candidates, const std::string& fidelity) {
  std::vector<Ranked> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].ok()) out.push_back({candidates[i], rows[i], fidelity, run_command(runs[i])});
  std::stable_sort(out.begin(), out.end(), [](const Ranked& a, const Ranked& b) {
    return a.result.iteration_time_s < b.result.iteration_time_s;
  });
  return out;
}

std::string strategy_text(const SweepRun& run) {
  std::string t;
  for (const auto& [k, v] : run.parameters)
    if (k != "global-batch") t += (t.empty() ? "" : " ") + k + "=" + v;
  return t;
}

void print_table(std::ostream& out, const std::vector<Ranked>& best, const std::vector<SweepRun>& runs) {
  out << "rank  dp  tp  pp  cp  ep  mb  schedule        recompute  zero  sp   samples/s  iteration ms   MFU  peak GiB  dominant cost\n";
  for (size_t i = 0; i < best.size(); ++i) {
    const SweepRun& run = runs[best[i].candidate];
    std::map<std::string, std::string> p(run.parameters.begin(), run.parameters.end());
    const std::string schedule = p["schedule"] + (p["schedule"] == "interleaved" ? " x" + p["vpp"] : "");
    const SweepResult& r = best[i].result;
    char line[300];
    std::snprintf(line, sizeof line, "%4zu %3s %3s %3s %3s %3s %3s  %-15s %-9s  %4s  %-3s %10.2f %13.3f %5.1f%% %9.2f  %s\n", i + 1,
                  p["dp"].c_str(), p["tp"].c_str(), p["pp"].c_str(), p["cp"].c_str(), p["ep"].c_str(),
                  p["micro-batch"].c_str(), schedule.c_str(), p["recompute"].c_str(), p["zero"].c_str(),
                  p["sequence-parallel"] == "true" ? "on" : "off", r.samples_per_s, r.iteration_time_s * 1e3, r.mfu * 100,
                  r.peak_memory_gib, r.dominant_cost.c_str());
    out << line;
  }
}

}  // namespace

// The search, in the order it happens; printing and outputs at the end.
namespace {

struct SearchOutcome {
  workloads::SpaceWalk walk;
  std::vector<SweepRun> runs;  // one per kept candidate (prune fidelity)
  std::vector<Ranked> estimated;  // prune fidelity, fastest first
  std::vector<Ranked> best;       // flow fidelity, fastest first
  size_t failed = 0;              // kept candidates whose run did not end ok
  double pruning_s = 0, flow_s = 0;  // wall time of the two phases
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ordered_json ranked_json(const Ranked& r, const std::vector<SweepRun>& runs) {
  ordered_json j = {{"strategy", ordered_json::object()}};
  for (const auto& [k, v] : runs[r.candidate].parameters) j["strategy"][k] = v;
  j["fidelity"] = r.fidelity;
  j["command"] = r.command;
  j.update(r.result.to_json());
  return j;
}

// Each candidate's strategy settings and the GiB its largest stage needs.
ordered_json candidates_json(const std::vector<workloads::Candidate>& list) {
  ordered_json out = ordered_json::array();
  for (const workloads::Candidate& c : list) {
    ordered_json e = ordered_json::object();
    for (const auto& [k, v] : workloads::strategy_settings(c.strategy)) e[k] = v;
    e["peak_memory_gib"] = c.peak_memory_bytes / (1024.0 * 1024.0 * 1024.0);
    out.push_back(e);
  }
  return out;
}

ordered_json search_json(const SearchSettings& s, const platforms::PlatformConfig& p, const SearchOutcome& o) {
  ordered_json j = {{"model", s.model}, {"platform", p.name}, {"nodes", p.nodes}, {"gpus", p.gpu_count()},
                    {"global_batch", s.global_batch}, {"prune_fidelity", s.prune_fidelity}, {"top", s.top}};
  j["candidates"] = {{"enumerated", o.walk.enumerated}, {"redundant", o.walk.redundant},
                     {"excluded", o.walk.excluded}, {"invalid", o.walk.invalid_total()},
                     {"out_of_memory", o.walk.out_of_memory.size()}, {"dominated", o.walk.dominated.size()},
                     {"simulated", o.walk.kept.size()},
                     {"failed_in_simulation", o.failed}};
  j["invalid_reasons"] = o.walk.invalid;
  j["out_of_memory"] = candidates_json(o.walk.out_of_memory);
  j["dominated"] = candidates_json(o.walk.dominated);
  j["best"] = ordered_json::array();
  for (const Ranked& r : o.best) j["best"].push_back(ranked_json(r, o.runs));
  j["estimated"] = ordered_json::array();
  for (const Ranked& r : o.estimated) j["estimated"].push_back(ranked_json(r, o.runs));
  return j;
}

std::string search_csv(const SearchOutcome& o) {
  std::vector<std::string> header = {"rank", "fidelity"};
  for (const auto& [k, v] : o.runs.front().parameters) header.push_back(k);
  for (const std::string& c : sweep_result_columns()) header.push_back(c);
  std::string text = csv_line(header);
  auto rows = [&](const std::vector<Ranked>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      std::vector<std::string> cells = {std::to_string(i + 1), list[i].fidelity};
      for (const auto& [k, v] : o.runs[list[i].candidate].parameters) cells.push_back(v);
      for (const std::string& c : sweep_result_cells(list[i].result)) cells.push_back(c);
      text += csv_line(cells);
    }
  };
  rows(o.best);
  if (o.estimated.empty() || o.estimated.front().fidelity != o.best.front().fidelity) rows(o.estimated);
  return text;
}

void print_counts(std::ostream& out, const SearchSettings& s, const SearchOutcome& o) {
  const workloads::SpaceWalk& w = o.walk;
  out << "  " << w.enumerated << " candidates: " << w.redundant << " redundant, " << w.excluded << " excluded, "
      << w.invalid_total() << " invalid, " << w.out_of_memory.size() << " out of memory, " << w.dominated.size()
      << " dominated (recompute more than a twin that fits), " << w.kept.size()
      << " simulated in " << s.prune_fidelity << " fidelity";
  if (o.failed) out << " (" << o.failed << " did not run)";
  out << ", the best " << o.best.size() << " in flow fidelity\n";
  std::vector<std::pair<size_t, std::string>> reasons;
  for (const auto& [reason, n] : w.invalid) reasons.emplace_back(n, reason);
  std::sort(reasons.rbegin(), reasons.rend());
  for (size_t i = 0; i < reasons.size() && i < 5; ++i)
    out << "    invalid " << reasons[i].first << ": " << reasons[i].second << "\n";
}

// The model with its overrides and the base strategy (framework, model file, fixed options).
struct SearchWorkload {
  workloads::ModelSpec model;
  workloads::Strategy base;
};

SearchWorkload search_workload(const SearchSettings& s, const po::variables_map& vm) {
  SearchWorkload w;
  w.model = workloads::load_model(s.model);
  workloads::ModelOverrides overrides;
  for (const workloads::OptionInfo& o : workloads::model_override_options())
    if (vm.count(o.name)) workloads::set_model_override(overrides, o.name, vm[o.name].as<std::string>());
  workloads::apply_overrides(w.model, overrides);
  const workloads::Framework framework = load_framework_option(s.compute);
  w.base = workloads::default_strategy(w.model, &framework);
  for (const workloads::OptionInfo& o : workloads::strategy_options())
    if (!searched(o.name) && vm.count(o.name)) workloads::set_strategy_option(w.base, o.name, vm[o.name].as<std::string>());
  return w;
}

SearchOutcome run_search(const SearchSettings& s, const po::variables_map& vm, const platforms::PlatformConfig& p,
                         const SearchWorkload& work, const RankGroup& ranks, std::ostream& out, std::ostream& err) {
  const workloads::ModelSpec& model = work.model;
  const workloads::Strategy& base = work.base;
  const workloads::SpaceDimensions dims =
      workloads::complete_dimensions(s.dims, model, p.gpu_count(), p.node.gpus);
  SearchOutcome o;
  o.walk = workloads::walk_strategy_space(model, base, dims, p.gpu_count(), s.global_batch,
                                          p.gpu.hbm_capacity_gib * 1024.0 * 1024.0 * 1024.0);
  if (o.walk.kept.empty()) {
    print_counts(out, s, o);
    throw InputError("no strategy in the space is valid and fits in memory (the counts above say why)");
  }
  const std::vector<std::string> shared = shared_args(s, vm);
  for (const workloads::Candidate& c : o.walk.kept) o.runs.push_back(candidate_run(c, p.gpu_count(), shared, s.prune_fidelity));
  SweepOptions options;
  options.jobs = s.jobs;
  options.on_row = progress(err, "simulating candidates in " + s.prune_fidelity + " fidelity");
  std::vector<size_t> all(o.runs.size());
  std::iota(all.begin(), all.end(), 0);
  const auto pruning_start = std::chrono::steady_clock::now();
  const SweepOutcome pruning = run_sweep(o.runs, options, ranks);
  o.pruning_s = seconds_since(pruning_start);
  o.estimated = rank(o.runs, pruning.rows, all, s.prune_fidelity);
  o.failed = o.runs.size() - o.estimated.size();
  if (o.estimated.empty()) throw std::runtime_error("no candidate's run ended ok (--report lists them)");
  if (s.prune_fidelity == "flow") {
    o.best.assign(o.estimated.begin(), o.estimated.begin() + std::min<size_t>(s.top, o.estimated.size()));
    return o;
  }
  std::vector<SweepRun> top;
  std::vector<size_t> which;
  for (size_t i = 0; i < o.estimated.size() && top.size() < size_t(s.top); ++i) {
    which.push_back(o.estimated[i].candidate);
    top.push_back(candidate_run(o.walk.kept[which.back()], p.gpu_count(), shared, "flow"));
  }
  options.on_row = progress(err, "simulating the best in flow fidelity");
  const auto flow_start = std::chrono::steady_clock::now();
  o.best = rank(top, run_sweep(top, options, ranks).rows, which, "flow");
  o.flow_s = seconds_since(flow_start);
  return o;
}

void print_search(std::ostream& out, const SearchSettings& s, const SearchOutcome& o) {
  print_counts(out, s, o);
  print_table(out, o.best, o.runs);
  const Ranked& best = o.best.front();
  const Ranked& worst = o.estimated.back();
  char line[300];
  std::snprintf(line, sizeof line, "spread: the best (%.2f samples/s) is %.2fx the worst of %zu simulated strategies (%.2f samples/s, %s fidelity: ",
                best.result.samples_per_s, best.result.samples_per_s / worst.result.samples_per_s, o.estimated.size(),
                worst.result.samples_per_s, worst.fidelity.c_str());
  out << line << strategy_text(o.runs[worst.candidate]) << ")";
  if (!o.walk.dominated.empty())
    out << "; the " << o.walk.dominated.size() << " dominated strategies, not simulated, are no faster than their twins";
  out << "\n";
  std::snprintf(line, sizeof line, "searched in %.1f s: %zu runs in %s fidelity %.1f s", o.pruning_s + o.flow_s,
                o.runs.size(), s.prune_fidelity.c_str(), o.pruning_s);
  out << line;
  if (s.prune_fidelity != "flow") {
    std::snprintf(line, sizeof line, ", the best %zu in flow fidelity %.1f s", o.best.size(), o.flow_s);
    out << line;
  }
  out << " (wall time)\n";
}

int lead(const std::vector<std::string>& args, const RankGroup& ranks, std::ostream& out, std::ostream& err) {
  SearchSettings s;
  po::variables_map vm;
  if (!parse(args, s, out, vm)) return 0;
  const platforms::PlatformConfig p = build_platform(s.platform);
  if (s.global_batch == 0) s.global_batch = p.gpu_count();
  const SearchWorkload work = search_workload(s, vm);
  out << "tessera search: " << s.model << " on " << p.nodes << " x " << p.name << " (" << p.gpu_count() << " x "
      << p.gpu.name << "), global batch " << s.global_batch << "\n";
  out.flush();
  const SearchOutcome o = run_search(s, vm, p, work, ranks, out, err);
  print_search(out, s, o);
  if (!s.report.empty()) write_json_file(s.report, search_json(s, p, o));
  if (!s.csv.empty()) write_output(s.csv, search_csv(o));
  return 0;
}

}  // namespace

int command_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const RankGroup ranks;
  if (!ranks.leader()) {
    SearchSettings s;
    po::variables_map vm;
    try {
      parse(args, s, out, vm);
    } catch (const std::exception&) {
      // Rank 0 reports the error and stops this rank.
    }
    return serve_sweeps(ranks, s.jobs);
  }
  const SweepWorkersRelease release(ranks);
  return lead(args, ranks, out, err);
}

}  // namespace tessera::app
