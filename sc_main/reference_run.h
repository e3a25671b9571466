// What co-simulation costs: the same run without its RTL blocks (the ports' C++ arbiters, no
// rate limiter), simulated in a forked child process before the run itself (SystemC elaborates
// once per process), for its wall time and its iteration time (docs/cosim.md).
#pragma once

#include <string>

#include "platforms/platform_config.h"
#include "sc_main/simulation.h"
#include "workloads/program.h"

namespace tessera::app {

// The platform with every RTL block replaced by the C++ model (arbiters) or removed (rate
// limiters).
platforms::PlatformConfig without_rtl(platforms::PlatformConfig platform);

struct ReferenceRun {
  bool ok = false;
  double wall_s = 0;
  double iteration_time_s = 0;
  std::string error;  // why there is none
};

// Simulates `job` on without_rtl(platform) in a child process. Never throws: a reference that
// fails says why in `error`, and the run goes on without it.
ReferenceRun run_without_rtl(const platforms::PlatformConfig& platform, const workloads::Job& job,
                             SimulationOptions options);

}  // namespace tessera::app
