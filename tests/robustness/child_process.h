// Runs a program in a child process under a wall-clock and an address-space limit, capturing
// its exit status, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace robustness {

struct Limits {
  double wall_s = 60;
  unsigned long long address_space_bytes = 4ULL << 30;
};

struct Outcome {
  int status = -1;         // the exit status; -1 when killed by a signal
  int signal = 0;          // the signal that ended it, 0 for a normal exit
  bool timed_out = false;  // killed at the wall-clock limit
  long max_rss_kib = 0;    // peak resident memory
  std::string out, err;
};

// Runs `program` with `args` in `directory`, stdin from /dev/null.
Outcome run_child(const std::string& program, const std::vector<std::string>& args,
                  const std::string& directory, const Limits& limits);

}  // namespace robustness
