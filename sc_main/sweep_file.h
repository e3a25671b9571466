// A sweep file (YAML, docs/sweep.md): options every run shares (`base`), a grid whose every
// combination is a run (`grid`) and/or a list of runs (`runs`); with both, every listed run is
// combined with every grid point. Keys are the long options of `tessera run` and `set.KEY`
// (a platform value, as --set KEY=VALUE). Every error names the file, line and key.
#pragma once

#include <string>
#include <vector>

#include "sc_main/sweep_engine.h"

namespace tessera::app {

// More runs than this in one sweep file is an error (a grid that multiplies out of hand).
constexpr size_t kMaxSweepRuns = 100000;

struct SweepPlan {
  std::vector<SweepRun> runs;
  std::vector<std::string> columns;  // parameter keys, in order of first appearance
};

SweepPlan read_sweep_file(const std::string& path);

}  // namespace tessera::app
