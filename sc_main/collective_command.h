// `tessera collective`: one collective over a size sweep on a platform, printed as nccl-tests
// prints it (size, count, type, time, algbw, busbw with nccl-tests' bus-bandwidth factors),
// optionally compared with a measured curve and plotted as SVG.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "models/collectives/tuner.h"
#include "platforms/platform.h"
#include "sc_main/simulation.h"

namespace tessera::app {

struct SweepSettings {
  std::string op = "allreduce";
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 128ull << 20;
  double step_factor = 2.0;
  // GPUs of each node that take part (nccl-tests' processes per node), the first of each node;
  // 0: every GPU.
  int gpus_per_node = 0;
  SimulationOptions options;  // algorithm/protocol overrides in options.collectives
};

// The GPUs that take part: the first `gpus_per_node` of each node (0: all).
std::vector<int> sweep_members(const platforms::PlatformConfig& platform, int gpus_per_node);

struct SweepRow {
  uint64_t size_bytes = 0;
  uint64_t count = 0;        // elements (float)
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string algorithm, protocol;
  int channels = 0;
};

// The sizes of the sweep: min, min*f, ... up to max (nccl-tests' -b/-e/-f).
std::vector<uint64_t> sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, double factor);
// Runs the sweep as one simulation (the calls back to back on one stream, as nccl-tests runs
// them); a call's time is the longest any rank spends in it. Once per process (SystemC).
// `simulation`, when given, receives the whole run's result (wall time, transactions, links).
std::vector<SweepRow> run_sweep(const platforms::PlatformConfig& platform, const SweepSettings& s,
                                SimulationResult* simulation = nullptr);

int command_collective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
