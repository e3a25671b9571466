// The sweep engine: runs many `tessera run` command lines in child processes, at most `jobs` at
// once on every MPI rank, and gathers one row per run on rank 0, in the order of the runs.
// Every finished row is appended to a journal (one JSON line, flushed to disk) before the next
// is reported, so an interrupted sweep started again re-runs only what had not finished.
// `tessera sweep` and `tessera search` both run through it (docs/sweep.md).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sc_main/mpi_ranks.h"

namespace tessera::app {

struct SweepRun {
  std::string name;  // a label ("" for none)
  std::vector<std::pair<std::string, std::string>> parameters;  // key, value: the row's columns
  std::vector<std::string> args;  // after "tessera run" (the engine adds --quiet and --report)
  // The run's identity in the journal: its command line.
  std::string key() const;
};

// What one run gave. status: ok, invalid (exit 2: bad input or an impossible strategy),
// deadlock (3), oom (4: a rank needs more memory than its HBM), limit (5), error (1, or a crash)
// and killed (ended by a signal from outside: not journaled, run again on a restart).
struct SweepResult {
  size_t index = 0;
  std::string status;
  int exit_status = 0;
  std::string error;
  double iteration_time_s = 0, samples_per_s = 0, tokens_per_s = 0, model_tflops_per_gpu = 0,
         mfu = 0, peak_memory_gib = 0;
  // Means over the ranks, seconds: compute by cause, exposed communication, idle.
  double gemm_s = 0, attention_s = 0, memory_bound_s = 0, framework_s = 0,
         exposed_communication_s = 0, idle_s = 0;
  std::string dominant_cost;  // the largest of the six above
  double wall_s = 0;          // the run's wall time (journal only: not a result)

  bool ok() const { return status == "ok"; }
  nlohmann::ordered_json to_json() const;  // without index and wall time
  static SweepResult from_json(const nlohmann::json& j);
};

struct SweepOptions {
  int jobs = 1;             // child processes at once, per rank
  std::string journal;      // "" for none
  bool fresh = false;       // discard the journal's rows
  // Called on rank 0 as each row arrives (resumed rows first), with rows done and the total.
  std::function<void(const SweepRun&, const SweepResult&, size_t done, size_t total, bool resumed)> on_row;
};

struct SweepOutcome {
  std::vector<SweepResult> rows;  // one per run, in run order
  size_t resumed = 0;          // rows taken from the journal
  size_t ran = 0;              // rows simulated now
};

// On rank 0: runs every run (sharing them with the other ranks) and returns the rows.
SweepOutcome run_sweep(const std::vector<SweepRun>& runs, const SweepOptions& options, const RankGroup& ranks);

// On the other ranks: runs what rank 0 sends until it says stop; returns the exit status it sends.
int serve_sweeps(const RankGroup& ranks, int jobs);

// Rank 0's end of the MPI job: tells every other rank to stop (with the command's status) when it
// goes out of scope, also when the command fails.
class SweepWorkersRelease {
 public:
  explicit SweepWorkersRelease(const RankGroup& ranks) : ranks_(ranks) {}
  ~SweepWorkersRelease();
  SweepWorkersRelease(const SweepWorkersRelease&) = delete;
  SweepWorkersRelease& operator=(const SweepWorkersRelease&) = delete;

 private:
  const RankGroup& ranks_;
};

// The row of a finished child: its exit status, its log (the error line) and its report.
SweepResult read_sweep_row(int exit_status, const std::string& log_path, const std::string& report_path);

}  // namespace tessera::app
