// A run that goes on too long or grows too large is stopped, never left to hang or to be
// killed by the kernel: a thread beside the simulation checks the wall clock and the resident
// memory every 100 ms and ends the process with one line and exit status 5 when either passes
// its limit (--max-wall-s, --max-memory-gib). Outputs are written only after a run finishes,
// so a stopped run leaves none.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include <boost/program_options.hpp>

namespace tessera::app {

struct WatchdogSettings {
  double max_wall_s = 0;      // 0: no limit
  double max_memory_gib = 0;  // 0: what the run's size leads one to expect (memory_limit_bytes)
};

// What a run of this size should hold at most: 256 MiB, 16 KiB per pair of nodes (the routes
// between them) and 64 bytes per op of the programs, each above what docs/limits.md measured
// (1,024 GPUs, 48.9 M ops: 0.92 GiB; 512 nodes: 4.2 GiB).
double expected_memory_bytes(int64_t nodes, uint64_t ops);
// The default limit: four times the expectation and at least 2 GiB (a growth far beyond its
// size is a runaway), never more than 90% of the machine's memory.
double memory_limit_bytes(double expected_bytes);

boost::program_options::options_description watchdog_options(WatchdogSettings& s);
// Checks the values (InputError naming the option).
void check_watchdog_settings(const WatchdogSettings& s);

// Watches from construction to destruction (the simulation's scope).
class Watchdog {
 public:
  // `expected_bytes`: expected_memory_bytes() of the run, for the default memory limit.
  Watchdog(const WatchdogSettings& settings, double expected_bytes);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch(double max_wall_s, double max_memory_bytes, bool from_size);
  std::mutex mutex_;
  std::condition_variable stop_;
  std::condition_variable started_;
  bool stopping_ = false;
  bool watching_ = false;  // the thread has started and holds no lock but mutex_
  std::thread thread_;
};

}  // namespace tessera::app
