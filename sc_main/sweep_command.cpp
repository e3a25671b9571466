#include "sc_main/sweep_command.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

#include <boost/program_options.hpp>

#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "sc_main/report.h"
#include "sc_main/sweep_file.h"

namespace po = boost::program_options;

namespace tessera::app {

std::vector<std::string> sweep_result_columns() {
  return {"status", "iteration_time_s", "throughput_samples_per_s", "throughput_tokens_per_s",
          "model_tflops_per_gpu", "mfu", "peak_memory_gib", "gemm_s", "attention_s", "memory_bound_s",
          "framework_s", "exposed_communication_s", "idle_s", "dominant_cost", "error"};
}

namespace {

std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

}  // namespace

std::vector<std::string> sweep_result_cells(const SweepResult& r) {
  std::vector<std::string> cells = {r.status};
  if (r.ok()) {
    for (double v : {r.iteration_time_s, r.samples_per_s, r.tokens_per_s, r.model_tflops_per_gpu, r.mfu,
                     r.peak_memory_gib, r.gemm_s, r.attention_s, r.memory_bound_s, r.framework_s,
                     r.exposed_communication_s, r.idle_s})
      cells.push_back(number(v));
    cells.push_back(r.dominant_cost);
  } else {
    cells.insert(cells.end(), 5, "");
    cells.push_back(r.peak_memory_gib > 0 ? number(r.peak_memory_gib) : "");
    cells.insert(cells.end(), 7, "");
  }
  cells.push_back(r.error);
  return cells;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) line += ",";
    const std::string& c = cells[i];
    if (c.find_first_of(",\"\n") == std::string::npos) {
      line += c;
      continue;
    }
    line += "\"";
    for (char ch : c) line += ch == '"' ? std::string("\"\"") : std::string(1, ch == '\n' ? ' ' : ch);
    line += "\"";
  }
  return line + "\n";
}

std::string run_command(const SweepRun& run) {
  std::string command = "tessera run";
  for (const std::string& a : run.args) command += " " + a;
  return command;
}

namespace {

struct SweepSettings {
  std::string file, out;
  int jobs = 1;
  bool fresh = false;
};

po::options_description sweep_options(SweepSettings& s) {
  po::options_description d("tessera sweep FILE.yaml [options]");
  d.add_options()
      ("help,h", "this help")
      ("sweep-file", po::value(&s.file), "the sweep file (docs/sweep.md); also the first argument")
      ("jobs,j", po::value(&s.jobs)->default_value(1), "runs at once, each in its own process (per MPI rank)")
      ("out", po::value(&s.out), "output prefix: PREFIX.csv, PREFIX.json and the journal PREFIX.journal.jsonl (default: the sweep file without .yaml)")
      ("fresh", po::bool_switch(&s.fresh), "forget the journal's finished rows and run everything again");
  return d;
}

// Options and the positional sweep file; false after --help.
bool parse(const std::vector<std::string>& args, SweepSettings& s, std::ostream& out) {
  po::options_description desc = sweep_options(s);
  po::positional_options_description positional;
  positional.add("sweep-file", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
    po::notify(vm);
  } catch (po::error& e) {
    throw InputError(option_error_message(e));
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return false;
  }
  if (s.file.empty()) throw InputError("tessera sweep: give a sweep file (tessera sweep FILE.yaml)");
  check_option("--jobs", double(s.jobs), limits::integers(1, 256));
  if (s.out.empty()) {
    std::filesystem::path p(s.file);
    s.out = (p.parent_path() / p.stem()).string();
  }
  return true;
}

nlohmann::ordered_json sweep_json(const SweepSettings& s, const SweepPlan& plan, const SweepOutcome& outcome) {
  nlohmann::ordered_json j = {{"sweep_file", s.file}, {"runs", plan.runs.size()}};
  std::map<std::string, int> statuses;
  for (const SweepResult& r : outcome.rows) ++statuses[r.status];
  j["statuses"] = statuses;
  j["rows"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    const SweepRun& run = plan.runs[i];
    nlohmann::ordered_json row = {{"index", i}, {"name", run.name}};
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
    for (const auto& [key, value] : run.parameters)
      parameters[key] = parameters.contains(key) ? parameters[key].get<std::string>() + " " + value : value;
    row["parameters"] = parameters;
    row["command"] = run_command(run);
    row.update(outcome.rows[i].to_json());
    j["rows"].push_back(row);
  }
  return j;
}

std::string sweep_csv(const SweepPlan& plan, const SweepOutcome& outcome) {
  std::vector<std::string> header = {"index", "name"};
  header.insert(header.end(), plan.columns.begin(), plan.columns.end());
  for (const std::string& c : sweep_result_columns()) header.push_back(c);
  std::string text = csv_line(header);
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    std::vector<std::string> cells = {std::to_string(i), plan.runs[i].name};
    for (const std::string& column : plan.columns) {
      std::string value;
      for (const auto& [key, v] : plan.runs[i].parameters)
        if (key == column) value += (value.empty() ? "" : " ") + v;
      cells.push_back(value);
    }
    for (const std::string& c : sweep_result_cells(outcome.rows[i])) cells.push_back(c);
    text += csv_line(cells);
  }
  return text;
}

std::string describe(const SweepRun& run) {
  if (!run.name.empty()) return run.name;
  std::string text;
  for (const auto& [key, value] : run.parameters) text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
}

void print_row(std::ostream& out, const SweepRun& run, const SweepResult& row, size_t done, size_t total) {
  char line[200];
  if (row.ok())
    std::snprintf(line, sizeof line, "[%zu/%zu] ok %10.3f ms %10.1f samples/s  MFU %5.1f%%  %6.2f GiB  (%.1f s)  ", done,
                  total, row.iteration_time_s * 1e3, row.samples_per_s, row.mfu * 100, row.peak_memory_gib, row.wall_s);
  else
    std::snprintf(line, sizeof line, "[%zu/%zu] %s: %s  ", done, total, row.status.c_str(), row.error.c_str());
  out << line << describe(run) << "\n";
  out.flush();
}

int lead(const SweepSettings& s, const RankGroup& ranks, std::ostream& out) {
  const SweepPlan plan = read_sweep_file(s.file);
  const std::string csv = s.out + ".csv", json = s.out + ".json", journal = s.out + ".journal.jsonl";
  check_output_paths({{"--out (CSV)", csv}, {"--out (JSON)", json}, {"--out (journal)", journal}});
  SweepOptions options;
  options.jobs = s.jobs;
  options.journal = journal;
  options.fresh = s.fresh;
  options.on_row = [&](const SweepRun& run, const SweepResult& row, size_t done, size_t total, bool resumed) {
    if (!resumed) print_row(out, run, row, done, total);
  };
  out << "tessera sweep: " << plan.runs.size() << " runs, " << s.jobs << " at a time on each of "
      << ranks.size() << " rank" << (ranks.size() > 1 ? "s" : "") << "\n";
  const SweepOutcome outcome = run_sweep(plan.runs, options, ranks);
  if (outcome.resumed > 0)
    out << outcome.resumed << " finished rows kept from " << journal << " (--fresh runs them again)\n";
  write_output(csv, sweep_csv(plan, outcome));
  write_json_file(json, sweep_json(s, plan, outcome));
  std::map<std::string, int> statuses;
  for (const SweepResult& r : outcome.rows) ++statuses[r.status];
  out << "ran " << outcome.ran << ", kept " << outcome.resumed << ":";
  for (const auto& [status, n] : statuses) out << " " << n << " " << status;
  out << "; wrote " << csv << " and " << json << "\n";
  return statuses.count("error") || statuses.count("killed") ? 1 : 0;
}

}  // namespace

int command_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  const RankGroup ranks;
  SweepSettings s;
  if (!ranks.leader()) {
    try {
      parse(args, s, out);
    } catch (const std::exception&) {
      // Rank 0 reports the error and stops this rank.
    }
    return serve_sweeps(ranks, s.jobs);
  }
  const SweepWorkersRelease release(ranks);
  if (!parse(args, s, out)) return 0;
  return lead(s, ranks, out);
}

}  // namespace tessera::app
