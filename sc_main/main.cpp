// The tessera executable: thin on purpose; everything is in the tessera_app library.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <systemc>

#include "sc_main/cli.h"
#include "sc_main/huge_pages.h"

namespace {

// Replaces this process with tessera on `args` (argv[0] first); returns only on failure.
void run_again(std::vector<std::string> args) {
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv("/proc/self/exe", cargv.data());
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  // Warnings are not errors for a user run; errors throw and become a one-line message.
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  // An error (an exception in a process included) reaches run_cli, which prints it on one line:
  // SystemC itself prints nothing.
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_FATAL, sc_core::SC_THROW);
  tessera::app::offer_rerun_with_huge_pages();
  int status = tessera::app::run_cli(argc, argv, std::cout, std::cerr);
  if (status == tessera::app::kRerunWithHugePages) {
    // Nothing is built yet: the same command again, glibc's allocator asking for huge pages.
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const std::string before = tunables ? tunables : "";
    setenv("GLIBC_TUNABLES", tessera::app::tunables_with_huge_pages(before).c_str(), 1);
    run_again(std::vector<std::string>(argv, argv + argc));
    // (Could not: this process runs it, on the pages it has, and says so.)
    if (tunables) setenv("GLIBC_TUNABLES", before.c_str(), 1);
    else unsetenv("GLIBC_TUNABLES");
    setenv("TESSERA_HUGE_PAGES", "off", 1);
    status = tessera::app::run_cli(argc, argv, std::cout, std::cerr);
  }
  if (status != tessera::app::kRerunWithoutSymmetry) return status;
  // The simulation kernel elaborates once per process: the run without symmetry is a new one.
  run_again(tessera::app::rerun_without_symmetry(argc, argv));
  std::cerr << "tessera: internal error: cannot run again without symmetry\n";
  return tessera::app::kInternalError;
}

int main(int argc, char* argv[]) {
  // SystemC prints a banner on stdout unless told not to; tessera's output is its own.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
