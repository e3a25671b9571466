#include "workloads/limits.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tessera::limits {

Range positive(double hi) { return Range{0, hi, true, false}; }
Range non_negative(double hi) { return Range{0, hi, false, false}; }
Range integers(int64_t lo, int64_t hi) { return Range{double(lo), double(hi), false, true}; }

std::string shown(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  if (std::floor(v) == v && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string input_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return "cannot read (no such file)";
  if (fs::is_directory(status)) return "cannot read (it is a directory)";
  if (!fs::is_regular_file(status)) return "cannot read (not a regular file)";
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxInputFileBytes)
    return "is " + std::to_string(size >> 20) + " MiB, more than the " + std::to_string(kMaxInputFileBytes >> 20) +
           " MiB an input file may have";
  if (!std::ifstream(path)) return std::string("cannot read (") + std::strerror(errno) + ")";
  return "";
}

std::string describe(const Range& r) {
  return std::string(r.integer ? "an integer in " : "a number in ") + (r.lo_open ? "(" : "[") +
         shown(r.lo) + ", " + shown(r.hi) + "]";
}

std::string problem(double v, const Range& r) {
  const bool below = r.lo_open ? !(v > r.lo) : !(v >= r.lo);
  const bool whole = !r.integer || std::floor(v) == v;
  if (!below && v <= r.hi && whole) return "";
  return "must be " + describe(r) + ", got " + shown(v);
}

}  // namespace tessera::limits
