// Runs `tessera run` command lines in child processes of this executable, at most `jobs` at
// once, each writing its JSON report (and, for layer cases, its trace) into a scratch folder.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace tessera::app {

struct ChildRun {
  std::vector<std::string> args;  // after "tessera"
  std::string log;                // stdout and stderr of the child go here
  int status = -1;                // exit status (128 + signal when killed)
  double wall_s = 0;
};

// Starts one child (`tessera` + run.args) with its output going to run.log. The child dies
// with its parent (a killed sweep leaves no orphan runs behind).
pid_t start_child(const ChildRun& run);
// The exit status of a finished child as ChildRun::status counts it (128 + signal when killed).
int child_exit_status(int wait_status);

// Runs every child (runs[i].args) with at most `jobs` at once; `finished(i)` is called as each
// ends, in the order they end.
void run_children(std::vector<ChildRun>& runs, int jobs, const std::function<void(size_t)>& finished);

// The last lines of a child's log (its error message).
std::string last_line(const std::string& log_path);

}  // namespace tessera::app
