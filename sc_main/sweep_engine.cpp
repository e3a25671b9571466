#include "sc_main/sweep_engine.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "sc_main/case_runner.h"
#include "sc_main/output_file.h"

namespace tessera::app {

using nlohmann::json;
using nlohmann::ordered_json;

std::string SweepRun::key() const { return json(args).dump(); }

ordered_json SweepResult::to_json() const {
  ordered_json j = {{"status", status}, {"exit_status", exit_status}};
  if (!error.empty()) j["error"] = error;
  j["iteration_time_s"] = iteration_time_s;
  j["throughput_samples_per_s"] = samples_per_s;
  j["throughput_tokens_per_s"] = tokens_per_s;
  j["model_tflops_per_gpu"] = model_tflops_per_gpu;
  j["mfu"] = mfu;
  j["peak_memory_gib"] = peak_memory_gib;
  j["time_by_cause_s"] = {{"gemm", gemm_s}, {"attention", attention_s}, {"memory_bound", memory_bound_s},
                          {"framework", framework_s}, {"exposed_communication", exposed_communication_s},
                          {"idle", idle_s}};
  j["dominant_cost"] = dominant_cost;
  return j;
}

SweepResult SweepResult::from_json(const json& j) {
  SweepResult r;
  r.status = j.at("status").get<std::string>();
  r.exit_status = j.at("exit_status").get<int>();
  r.error = j.value("error", "");
  r.iteration_time_s = j.at("iteration_time_s").get<double>();
  r.samples_per_s = j.at("throughput_samples_per_s").get<double>();
  r.tokens_per_s = j.at("throughput_tokens_per_s").get<double>();
  r.model_tflops_per_gpu = j.at("model_tflops_per_gpu").get<double>();
  r.mfu = j.at("mfu").get<double>();
  r.peak_memory_gib = j.at("peak_memory_gib").get<double>();
  const json& c = j.at("time_by_cause_s");
  r.gemm_s = c.at("gemm").get<double>();
  r.attention_s = c.at("attention").get<double>();
  r.memory_bound_s = c.at("memory_bound").get<double>();
  r.framework_s = c.at("framework").get<double>();
  r.exposed_communication_s = c.at("exposed_communication").get<double>();
  r.idle_s = c.at("idle").get<double>();
  r.dominant_cost = j.at("dominant_cost").get<std::string>();
  r.wall_s = j.value("wall_s", 0.0);
  return r;
}

namespace {

const char* status_name(int exit_status) {
  switch (exit_status) {
    case 0: return "ok";
    case 2: return "invalid";
    case 3: return "deadlock";
    case 4: return "oom";
    case 5: return "limit";
    default: return exit_status > 128 && exit_status != 128 + SIGSEGV && exit_status != 128 + SIGABRT
                        ? "killed" : "error";
  }
}

// The report's means over ranks (a summary report), and which cause is the largest.
void read_time_by_cause(const json& report, SweepResult& r) {
  const json& mean = report.at("mean_over_ranks");
  const json& c = mean.at("compute_by_cause_s");
  r.gemm_s = c.value("gemm", 0.0);
  r.attention_s = c.value("attention", 0.0);
  r.memory_bound_s = c.value("memory_bound", 0.0);
  r.framework_s = c.value("framework", 0.0);
  r.exposed_communication_s = mean.at("exposed_communication_time_s").get<double>();
  r.idle_s = mean.at("idle_time_s").get<double>();
  r.peak_memory_gib = report.value("peak_memory_gib", 0.0);
  const std::pair<const char*, double*> causes[] = {
      {"gemm", &r.gemm_s}, {"attention", &r.attention_s}, {"memory-bound", &r.memory_bound_s},
      {"framework", &r.framework_s}, {"exposed-communication", &r.exposed_communication_s},
      {"idle", &r.idle_s}};
  double largest = -1;
  for (const auto& [name, value] : causes)
    if (*value > largest) largest = *value, r.dominant_cost = name;
}

void read_report(const std::string& path, SweepResult& r) {
  std::ifstream in(path);
  const json report = json::parse(in);
  r.iteration_time_s = report.at("iteration_time_s").get<double>();
  r.samples_per_s = report.at("throughput_samples_per_s").get<double>();
  r.tokens_per_s = report.at("throughput_tokens_per_s").get<double>();
  r.model_tflops_per_gpu = report.at("model_tflops_per_gpu").get<double>();
  r.mfu = report.at("mfu").get<double>();
  read_time_by_cause(report, r);
}

}  // namespace

SweepResult read_sweep_row(int exit_status, const std::string& log_path, const std::string& report_path) {
  SweepResult r;
  r.exit_status = exit_status;
  r.status = status_name(exit_status);
  if (exit_status == 0) {
    try {
      read_report(report_path, r);
    } catch (const std::exception& e) {
      r = SweepResult{};
      r.exit_status = 1;
      r.status = "error";
      r.error = std::string("unreadable report: ") + e.what();
    }
    return r;
  }
  r.error = last_line(log_path);
  for (const char* prefix : {"tessera: error: ", "tessera: internal error: "})
    if (r.error.rfind(prefix, 0) == 0) r.error.erase(0, std::strlen(prefix));
  if (r.error.empty()) r.error = "exit status " + std::to_string(exit_status);
  // An out-of-memory run says what it needs: "... needs X GiB, has Y GiB".
  const size_t needs = r.error.find("needs ");
  if (r.status == "oom" && needs != std::string::npos)
    r.peak_memory_gib = std::atof(r.error.c_str() + needs + 6);
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;

// The child processes of one rank: at most `jobs` at once, each writing its report and log into
// this rank's scratch folder.
class LocalRunner {
 public:
  explicit LocalRunner(int jobs) : jobs_(std::max(1, jobs)) {
    char tmpl[] = "/tmp/tessera-sweep-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("cannot make a scratch folder in /tmp");
    scratch_ = tmpl;
  }
  ~LocalRunner() {
    for (const auto& [pid, running] : running_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
  }
  bool free() const { return static_cast<int>(running_.size()) < jobs_; }
  bool idle() const { return running_.empty(); }

  void start(size_t index, const std::vector<std::string>& args) {
    const std::string base = scratch_ + "/run" + std::to_string(index);
    ChildRun child;
    child.args = {"run"};
    child.args.insert(child.args.end(), args.begin(), args.end());
    child.args.insert(child.args.end(), {"--quiet", "--report", base + ".json", "--report-detail", "summary"});
    child.log = base + ".log";
    running_[start_child(child)] = {index, Clock::now()};
  }

  // The rows of the children that ended since the last call.
  std::vector<std::pair<size_t, SweepResult>> finished() {
    std::vector<std::pair<size_t, SweepResult>> out;
    for (auto it = running_.begin(); it != running_.end();) {
      int status = 0;
      if (waitpid(it->first, &status, WNOHANG) != it->first) {
        ++it;
        continue;
      }
      const std::string base = scratch_ + "/run" + std::to_string(it->second.index);
      SweepResult row = read_sweep_row(child_exit_status(status), base + ".log", base + ".json");
      row.wall_s = std::chrono::duration<double>(Clock::now() - it->second.start).count();
      std::remove((base + ".log").c_str());
      std::remove((base + ".json").c_str());
      out.emplace_back(it->second.index, std::move(row));
      it = running_.erase(it);
    }
    return out;
  }

 private:
  struct Running {
    size_t index;
    Clock::time_point start;
  };
  int jobs_;
  std::string scratch_;
  std::map<pid_t, Running> running_;
};

// (short: a run in analytic fidelity takes some tens of milliseconds, and a row waits for the next look)
void pause_briefly() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

// The journal: one line {"key": ..., "row": ...} per finished run.
class Journal {
 public:
  Journal(std::string path, bool fresh) : path_(std::move(path)) {
    if (path_.empty()) return;
    if (!fresh) load();
    std::string text;
    for (const auto& [key, line] : lines_) text += line + "\n";
    write_output(path_, text);  // drops a line cut short by an interruption
  }
  const SweepResult* find(const std::string& key) const {
    auto it = rows_.find(key);
    return it == rows_.end() ? nullptr : &it->second;
  }
  void append(const std::string& key, const SweepResult& row) {
    if (path_.empty()) return;
    ordered_json j = {{"key", key}, {"row", row.to_json()}};
    j["row"]["wall_s"] = row.wall_s;
    const std::string line = j.dump() + "\n";
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ok = fd >= 0 && ::fdatasync(fd) == 0 && ok;
    if (fd >= 0) ::close(fd);
    if (!ok) throw OutputError(path_ + ": cannot write (" + std::strerror(errno) + ")");
  }

 private:
  void load() {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      try {
        const json j = json::parse(line);
        const std::string key = j.at("key").get<std::string>();
        SweepResult row = SweepResult::from_json(j.at("row"));
        if (!rows_.count(key)) lines_.emplace_back(key, line);
        rows_[key] = std::move(row);
      } catch (const std::exception&) {
        // A line cut short when the sweep was killed: its run is simply run again.
      }
    }
  }
  std::string path_;
  std::map<std::string, SweepResult> rows_;
  std::vector<std::pair<std::string, std::string>> lines_;
};

json run_message(size_t index, const SweepRun& run) { return {{"index", index}, {"args", run.args}}; }

}  // namespace

SweepOutcome run_sweep(const std::vector<SweepRun>& runs, const SweepOptions& options, const RankGroup& ranks) {
  SweepOutcome outcome;
  outcome.rows.resize(runs.size());
  Journal journal(options.journal, options.fresh);
  std::deque<size_t> pending;
  size_t done = 0;
  auto record = [&](size_t index, SweepResult row, bool resumed) {
    row.index = index;
    outcome.rows[index] = row;
    ++done;
    if (!resumed && row.status != "killed") journal.append(runs[index].key(), row);
    if (options.on_row) options.on_row(runs[index], row, done, runs.size(), resumed);
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    if (const SweepResult* row = journal.find(runs[i].key())) {
      record(i, *row, true);
      ++outcome.resumed;
    } else {
      pending.push_back(i);
    }
  }
  outcome.ran = pending.size();
  LocalRunner local(options.jobs);
  std::vector<int> remote_free(ranks.size(), std::max(1, options.jobs));
  while (done < runs.size()) {
    bool busy = false;
    while (!pending.empty() && local.free()) {
      local.start(pending.front(), runs[pending.front()].args);
      pending.pop_front();
    }
    for (int r = 1; r < ranks.size(); ++r)
      for (; !pending.empty() && remote_free[r] > 0; --remote_free[r], pending.pop_front())
        ranks.send(r, RankMessage::Run, run_message(pending.front(), runs[pending.front()]).dump());
    for (auto& [index, row] : local.finished()) record(index, std::move(row), false), busy = true;
    int from = 0;
    RankMessage tag{};
    std::string text;
    while (ranks.receive(from, tag, text)) {
      if (tag != RankMessage::Row) continue;
      const json j = json::parse(text);
      ++remote_free[from];
      record(j.at("index").get<size_t>(), SweepResult::from_json(j.at("row")), false);
      busy = true;
    }
    if (!busy) pause_briefly();
  }
  return outcome;
}

int serve_sweeps(const RankGroup& ranks, int jobs) {
  LocalRunner local(jobs);
  for (;;) {
    bool busy = false;
    int from = 0;
    RankMessage tag{};
    std::string text;
    while (ranks.receive(from, tag, text)) {
      busy = true;
      if (tag == RankMessage::Stop) return std::atoi(text.c_str());
      if (tag != RankMessage::Run) continue;
      const json j = json::parse(text);
      local.start(j.at("index").get<size_t>(), j.at("args").get<std::vector<std::string>>());
    }
    for (auto& [index, row] : local.finished()) {
      ordered_json message = {{"index", index}, {"row", row.to_json()}};
      message["row"]["wall_s"] = row.wall_s;
      ranks.send(0, RankMessage::Row, message.dump());
      busy = true;
    }
    if (!busy) pause_briefly();
  }
}

SweepWorkersRelease::~SweepWorkersRelease() {
  for (int r = 1; r < ranks_.size(); ++r) ranks_.send(r, RankMessage::Stop, "0");
}

}  // namespace tessera::app
