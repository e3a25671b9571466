// Bad input: one clear line naming the file, line and key where there are any. Exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::app {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// "FILE:LINE: key 'KEY': PROBLEM" (line 0 leaves the line out).
InputError input_error(const std::string& file, int line, const std::string& key,
                       const std::string& problem);

}  // namespace tessera::app
