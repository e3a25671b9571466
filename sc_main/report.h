// The run report: a human summary for the terminal, the same as JSON (units in the key names),
// and a Chrome/Perfetto trace.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "platforms/platform.h"
#include "sc_main/simulation.h"
#include "workloads/compiler.h"
#include "workloads/program.h"

namespace tessera::app {

// `memory` is the per-rank memory breakdown of a compiled model (empty for a job file).
// One number with a printf format ("%.3f ms").
std::string format(const char* fmt, double v);

// How much of the run the report holds: `Full`, every rank and every link too; `Summary`, the
// iteration and the means over ranks only (a sweep's row; a large platform's full report is
// megabytes).
enum class ReportDetail { Full, Summary };

nlohmann::ordered_json report_json(const platforms::PlatformConfig& platform,
                                   const workloads::Job& job,
                                   const std::vector<workloads::MemoryBreakdown>& memory,
                                   const SimulationResult& result,
                                   ReportDetail detail = ReportDetail::Full);
// Writes report_json's report to `path` (write_output), a full report's ranks and links one
// at a time: a run of 65,536 GPUs reports some 850,000 links, a 230 MB file whose tree would
// take a gigabyte.
void write_report(const std::string& path, const platforms::PlatformConfig& platform, const workloads::Job& job,
                  const std::vector<workloads::MemoryBreakdown>& memory, const SimulationResult& result,
                  ReportDetail detail);
void print_summary(std::ostream& out, const platforms::PlatformConfig& platform,
                   const workloads::Job& job,
                   const std::vector<workloads::MemoryBreakdown>& memory,
                   const SimulationResult& result);
nlohmann::ordered_json trace_json(const platforms::PlatformConfig& platform,
                                  const workloads::Job& job, const SimulationResult& result,
                                  double bucket_us);
// Writes JSON to a file as a whole (write_output); throws OutputError when it cannot.
void write_json_file(const std::string& path, const nlohmann::ordered_json& json);

}  // namespace tessera::app
