// What every fuzz harness shares: the fuzzer's bytes as a file (the readers take paths), and
// the contract it checks: a reader either returns or throws the input error of its format.
// Any other exception, a crash, a hang or a sanitizer report is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

namespace fuzzing {

// A file holding `data`, rewritten for every input (one per process).
inline std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/tmp/tessera-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

// Runs `read`; an exception that `is_input_error` does not accept aborts (a finding).
template <typename... InputErrors>
void expect_input_errors_only(const std::function<void()>& read) {
  try {
    read();
  } catch (const std::exception& e) {
    if ((... || (dynamic_cast<const InputErrors*>(&e) != nullptr))) return;
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace fuzzing
