// A scratch folder for one test process: made on first use, removed with everything in it when
// that process exits (not when a forked child of it does).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace test_support {

class TempFolder {
 public:
  // `prefix`: the folder's name before its random suffix, e.g. "/tmp/tessera-cli-".
  explicit TempFolder(const std::string& prefix) : owner_(getpid()) {
    std::string pattern = prefix + "XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make " + pattern);
    path_ = pattern;
  }
  ~TempFolder() {
    if (getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  pid_t owner_;
  std::string path_;
};

}  // namespace test_support
