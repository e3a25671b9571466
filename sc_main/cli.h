// The tessera command line. Exit status: 0 success, 1 internal error, 2 bad input,
// 3 a program that cannot finish (deadlock), 4 out of memory, 5 a limit of the run reached,
// 6 an RTL block broke its pin contract (7 and 8 are internal: the executable runs again).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

enum ExitStatus {
  kOk = 0,
  kInternalError = 1,  // also an output that could not be written
  kBadInput = 2,
  kDeadlock = 3,
  kOutOfMemory = 4,
  kLimitReached = 5,  // --max-wall-s or --max-memory-gib stopped the run
  kRtlContract = 6,   // a co-simulated RTL block broke its pin contract (docs/cosim.md)
  // Not an exit status: a run with symmetry found its replicas apart; the executable runs it
  // again with rerun_without_symmetry's arguments.
  kRerunWithoutSymmetry = 7,
  // Not an exit status: a large simulated run asks to start again on huge pages, before it
  // has built or printed anything (sc_main/huge_pages.h).
  kRerunWithHugePages = 8,
};

// The command line of the same run without symmetry (--symmetry=off in place of any
// --symmetry given), argv[0] first.
std::vector<std::string> rerun_without_symmetry(int argc, const char* const* argv);

// For files that hold options of `tessera run` (sweep files): the command-line arguments that
// set option `key` (a long name without dashes) to `value`, checked as the command line checks
// them. A switch takes true or false (false: no argument). Throws InputError naming the problem.
std::vector<std::string> run_option_args(const std::string& key, const std::string& value);

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
