// tessera analyze: questions for the analytic model (docs/analytic.md). --sensitivity: which
// hardware parameter is worth improving; --confirm re-runs the three that matter most in flow
// fidelity (child processes) and prints both elasticities.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "analytic/symbolic.h"
#include "platforms/platform_config.h"
#include "platforms/routing.h"
#include "sc_main/simulation.h"
#include "sc_main/sensitivity.h"
#include "workloads/program.h"

namespace tessera::app {

struct AnalyzeSettings {
  bool sensitivity = false;
  bool symbolic = false;
  bool confirm = false;
  double step = 0.01;  // relative step of the central differences
};

boost::program_options::options_description analyze_options(AnalyzeSettings& a);
// InputError naming the option for settings that cannot run.
void check_analyze_settings(const AnalyzeSettings& a);

// Runs the analyses asked for. `run_args`: the command line as `tessera run` takes it (for the
// flow runs of --confirm). Returns the exit status.
int run_analyses(const AnalyzeSettings& a, const platforms::PlatformConfig& platform,
                 const workloads::Job& job, const IterationTime& iteration,
                 const std::vector<std::string>& run_args, std::ostream& out, std::ostream& err);

// The iteration time as a sum of terms W / (eta X) over the analytic critical path, each term
// labelled by cause (analytic/symbolic.h), and its value against the analytic model's.
void print_symbolic(std::ostream& out, const platforms::PlatformConfig& platform,
                    const platforms::RoutedTopology& topology, const workloads::Job& job,
                    const SimulationOptions& options, const analytic::WorkloadSymbols& symbols);

}  // namespace tessera::app
