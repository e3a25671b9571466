// The job file: hand-written per-rank programs in YAML (or JSON, which YAML reads too), for
// micro-benchmarks and experiments that the model zoo does not cover. Format: docs/job-file.md.
#pragma once

#include <string>

#include "workloads/program.h"

namespace tessera::app {

// Throws InputError naming the file, line and key of the first problem.
workloads::Job load_job_file(const std::string& path);

}  // namespace tessera::app
