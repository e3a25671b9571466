// The tessera command line. Exit status: 0 success, 1 internal error, 2 bad input,
// 3 a program that cannot finish (deadlock), 4 out of memory, 5 a limit of the run reached,
// 6 an RTL block broke its pin contract.
#pragma once

#include <iosfwd>

namespace tessera::app {

enum ExitStatus {
  kOk = 0,
  kInternalError = 1,  // also an output that could not be written
  kBadInput = 2,
  kDeadlock = 3,
  kOutOfMemory = 4,
  kLimitReached = 5,  // --max-wall-s or --max-memory-gib stopped the run
  kRtlContract = 6,   // a co-simulated RTL block broke its pin contract (docs/cosim.md)
};

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
