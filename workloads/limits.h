// What tessera can represent, and the one range check every reader of input uses
// (command-line options, platform, GPU, model, strategy, job and config files). Each limit is
// derived in docs/limits.md; an input outside its range is an error naming the source, the
// value and the range, never a wrapped or saturated result.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::limits {

// SystemC counts time as an unsigned 64-bit number of its resolution (1 ps in tessera):
// 2^64 ps, about 213.5 days of simulated time, is all a run can span.
constexpr double kTimeResolutionS = 1e-12;
constexpr double kMaxSimulatedS = 18446744.073709551615;
// One latency or overhead: at most a second, so a run holds at least 1.8e7 of them in a row.
constexpr double kMaxDelayS = 1.0;

// The largest platform accepted: 65,536 GPUs, at most 1,024 in a node. Memory is the practical
// limit below it (4,096 GPUs take about 4 GiB, growing faster than linearly with the routes);
// --max-memory-gib stops a run that outgrows the machine (docs/limits.md).
constexpr int64_t kMaxGpus = 65536;
constexpr int64_t kMaxGpusPerNode = 1024;

// One op: bytes it moves or reduces (1 PiB) and FLOPs it computes (a zettaFLOP, 1e6 s on a
// 1 PFLOP/s GPU). Model dimensions stay below 2^24 so that products of three of them (FLOPs of
// a GEMM) stay exact in a double and far from int64's end.
constexpr double kMaxOpBytes = 1125899906842624.0;  // 2^50
constexpr double kMaxOpFlops = 1e21;
constexpr int64_t kMaxModelDimension = int64_t(1) << 24;

// A fabric chunk (--chunk-kib) of at most 1 GiB: a chunk is the unit of every transfer, and
// one larger than any message only costs accuracy.
constexpr int64_t kMaxChunkKib = int64_t(1) << 20;

// An input file (platform, GPU, model, strategy, job, config, CSV, calibration) is a regular
// file of at most 64 MiB: the largest shipped one is a few KiB, and a device such as /dev/zero
// would be read forever.
constexpr uint64_t kMaxInputFileBytes = uint64_t(64) << 20;
// "" when `path` names a readable regular file within kMaxInputFileBytes, else the problem
// ("cannot read (no such file)", "cannot read (a directory)", "is 80 MiB, more than ...").
std::string input_file_problem(const std::string& path);

// A range of accepted values, shown in messages as "[lo, hi]" or "(lo, hi]".
struct Range {
  double lo;
  double hi;
  bool lo_open = false;  // lo itself is not accepted ("positive": lo = 0, lo_open)
  bool integer = false;
};

Range positive(double hi);               // (0, hi]
Range non_negative(double hi);           // [0, hi]
Range integers(int64_t lo, int64_t hi);  // [lo, hi], whole numbers

// "" when v is in r, else "must be <what r accepts>, got <v>" (NaN and infinities included).
std::string problem(double v, const Range& r);
// The shortest text that reads back as v ("1e-09", "0.4", "65536").
std::string shown(double v);
// r as text: "a number in (0, 1e+06]", "an integer in [1, 65536]".
std::string describe(const Range& r);

}  // namespace tessera::limits
