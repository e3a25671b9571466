// Bad input: one clear line naming the file, line and key where there are any. Exit status 2.
#pragma once

#include <stdexcept>
#include <string>

#include "workloads/limits.h"

namespace tessera::app {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// "FILE:LINE: key 'KEY': PROBLEM" (line 0 leaves the line out).
InputError input_error(const std::string& file, int line, const std::string& key,
                       const std::string& problem);

// An option's value out of its range: "--OPTION: must be a number in (0, 1e+06], got 0".
void check_option(const std::string& option, double value, const limits::Range& range);

// An input file that is not a readable regular file within limits::kMaxInputFileBytes:
// "PATH: WHAT cannot read (no such file)".
void require_input_file(const std::string& path, const std::string& what);

}  // namespace tessera::app
