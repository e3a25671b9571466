// A measured bus-bandwidth curve (CSV: '#' source lines, then a header naming size_bytes and
// either ip_time_us or a busbw column), as the validation data sets under tests/validation/data
// hold them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::calibration {

struct MeasuredPoint {
  uint64_t size_bytes = 0;
  double busbw_gbps = 0;  // GB/s (1e9 bytes/s)
};

struct MeasuredCurve {
  std::string path;
  std::vector<std::string> source;  // the '#' lines, without '#'
  std::vector<MeasuredPoint> points;
};

// Which rows of a file that holds several curves: a file with an `op` column (nccl-tests' names,
// all_reduce ...) holds one curve per operation, one with a `dataset` column one per measured
// machine or setting.
struct CurveSelection {
  std::string op;       // the collective ("allreduce" or "all_reduce"); "" takes every row
  std::string dataset;  // "" where the file holds one dataset
};

// Reads the CSV. With an in-place time column the bus bandwidth is recomputed from the time
// (the printed busbw has two decimals, too coarse for small sizes): busbw = size/time * factor.
// `busbw_factor` is nccl-tests' factor for the operation. Throws workloads::InputError naming the
// file, line and column on bad input, and a selection that picks no rows or a file of several
// datasets read without naming one (the error lists them).
MeasuredCurve read_measured_curve(const std::string& path, double busbw_factor, const CurveSelection& selection = {});

}  // namespace tessera::calibration
