#include "sc_main/watchdog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "sc_main/cli.h"
#include "sc_main/input_error.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

double machine_memory_bytes() {
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
}

// Read with system calls into a buffer on the stack: the watching thread takes no lock that
// the simulation's thread may need (the allocator's, the locale's), so a process forked while
// it reads (run_without_rtl's child, which runs a simulation) never inherits one held.
double resident_bytes() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return 0;
  // "size resident shared ...", in pages: the second field.
  ssize_t i = 0;
  while (i < got && text[i] != ' ') ++i;
  double pages = 0;
  for (++i; i < got && text[i] >= '0' && text[i] <= '9'; ++i) pages = pages * 10 + (text[i] - '0');
  return pages * double(sysconf(_SC_PAGESIZE));
}

[[noreturn]] void stop_run(const char* what, double value, double limit, const char* option,
                          const char* why = "") {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%102s\r", "");  // the progress line (progress_line.h)
  std::fprintf(stderr, "tessera: error: the run stopped: %s %.3g beyond %s %.3g%s (nothing was written)\n", what,
               value, option, limit, why);
  std::fflush(stderr);
  _exit(kLimitReached);
}

}  // namespace

po::options_description watchdog_options(WatchdogSettings& s) {
  po::options_description limits("limits of a run");
  limits.add_options()
      ("max-wall-s", po::value(&s.max_wall_s)->default_value(0), "stop the run (exit 5) after this many seconds of wall-clock time (0: no limit)")
      ("max-memory-gib", po::value(&s.max_memory_gib)->default_value(0), "stop the run (exit 5) when it holds more memory than this, GiB (0: four times what its size needs, at most 90% of the machine's)");
  return limits;
}

void check_watchdog_settings(const WatchdogSettings& s) {
  check_option("--max-wall-s", s.max_wall_s, limits::non_negative(1e9));
  check_option("--max-memory-gib", s.max_memory_gib, limits::non_negative(1 << 20));
}

double expected_memory_bytes(int64_t nodes, uint64_t ops) {
  return 256.0 * (1 << 20) + 16.0 * 1024 * double(nodes) * double(nodes) + 64.0 * double(ops);
}

double memory_limit_bytes(double expected_bytes) {
  return std::min(0.9 * machine_memory_bytes(), std::max(2.0 * (1 << 30), 4 * expected_bytes));
}

Watchdog::Watchdog(const WatchdogSettings& s, double expected_bytes) {
  const bool from_size = s.max_memory_gib == 0;
  const double memory = from_size ? memory_limit_bytes(expected_bytes) : s.max_memory_gib * double(1 << 30);
  thread_ = std::thread([this, wall = s.max_wall_s, memory, from_size] { watch(wall, memory, from_size); });
  // A thread that is starting allocates (its stack, the sanitizers' state): a process forked
  // then (run_without_rtl's child) could inherit an allocator lock held and wait for it forever.
  // Return once the thread is in its loop, where it takes no lock but its own.
  std::unique_lock<std::mutex> lock(mutex_);
  started_.wait(lock, [this] { return watching_; });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void Watchdog::watch(double max_wall_s, double max_memory_bytes, bool from_size) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  watching_ = true;
  started_.notify_all();
  while (!stop_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; })) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (max_wall_s > 0 && wall > max_wall_s) stop_run("wall-clock time (s)", wall, max_wall_s, "--max-wall-s");
    const double resident = resident_bytes();
    if (resident > max_memory_bytes)
      stop_run("memory (GiB)", resident / double(1 << 30), max_memory_bytes / double(1 << 30), "--max-memory-gib",
               from_size ? ", the default for this run's size: it grew far beyond what its GPUs and ops need" : "");
  }
}

}  // namespace tessera::app
