// `tessera sweep FILE.yaml`: the runs of a sweep file in parallel processes (-j), on every rank
// of an MPI job (`mpirun -np N tessera sweep FILE.yaml`), merged into one CSV and one JSON,
// resumable after an interruption (docs/sweep.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "sc_main/sweep_engine.h"

namespace tessera::app {

int command_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The columns every sweep row has after its parameters, and a row as CSV cells (empty where a run
// that failed has no value).
std::vector<std::string> sweep_result_columns();
std::vector<std::string> sweep_result_cells(const SweepResult& row);
// One CSV line, cells quoted where they need it.
std::string csv_line(const std::vector<std::string>& cells);
// "tessera run ARGS" as one would type it.
std::string run_command(const SweepRun& run);

}  // namespace tessera::app
