// Errors the workload library reports to the command line.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::workloads {

// Bad input: a YAML typo, an unknown key, an impossible strategy. what() is one line that names
// the file, line and key (YAML) or the values involved (strategy). The command line maps it to
// exit status 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// A rank's peak memory exceeds the GPU's HBM. what() reads
// "out of memory on rank R: needs X GiB, has Y GiB"; the command line maps it to exit status 4.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(const std::string& message, int rank, double needs_bytes, double has_bytes)
      : std::runtime_error(message), rank(rank), needs_bytes(needs_bytes), has_bytes(has_bytes) {}
  int rank;
  double needs_bytes;
  double has_bytes;
};

}  // namespace tessera::workloads
