#include "sc_main/huge_pages.h"

#include <gnu/libc-version.h>

#include <cstdio>
#include <cstdlib>

#include "sc_main/output_file.h"

namespace tessera::app {
namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";
constexpr const char* kModeFile = "/sys/kernel/mm/transparent_hugepage/enabled";
bool offered = false;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// glibc's own allocator, new enough to read the tunable.
bool glibc_allocator_with_tunable() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_MEMORY__)
  return false;
#else
  // valgrind preloads its own allocator, and a run again would leave valgrind behind.
  return environment("LD_PRELOAD").find("vgpreload") == std::string::npos &&
         glibc_has_huge_page_tunable(gnu_get_libc_version());
#endif
}

}  // namespace

void offer_rerun_with_huge_pages() { offered = true; }

bool kernel_gives_huge_pages_on_request(const std::string& enabled_file_text) {
  return enabled_file_text.find("[madvise]") != std::string::npos;
}

bool glibc_has_huge_page_tunable(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
}

std::string tunables_with_huge_pages(const std::string& current) {
  const std::string setting = std::string(kTunable) + "=1";
  return current.empty() ? setting : current + ":" + setting;
}

bool allocator_asks_for_huge_pages() {
  if (environment("GLIBC_TUNABLES").find(std::string(kTunable) + "=1") == std::string::npos) return false;
  if (!glibc_allocator_with_tunable()) return false;
  const std::string mode = read_all(kModeFile);
  return kernel_gives_huge_pages_on_request(mode) || mode.find("[always]") != std::string::npos;
}

bool huge_pages_on_request() {
  return glibc_allocator_with_tunable() && kernel_gives_huge_pages_on_request(read_all(kModeFile));
}

bool rerun_with_huge_pages(int gpus) {
  if (!offered || gpus < kHugePagesFromGpus) return false;
  if (environment("TESSERA_HUGE_PAGES") == "off") return false;
  if (environment("GLIBC_TUNABLES").find(kTunable) != std::string::npos) return false;
  return huge_pages_on_request();
}

}  // namespace tessera::app
