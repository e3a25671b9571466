// A run that goes on too long or grows too large is stopped, never left to hang or to be
// killed by the kernel: a thread beside the simulation checks the wall clock and the resident
// memory every 100 ms and ends the process with one line and exit status 5 when either passes
// its limit (--max-wall-s, --max-memory-gib). Outputs are written only after a run finishes,
// so a stopped run leaves none.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/program_options.hpp>

namespace tessera::app {

struct WatchdogSettings {
  double max_wall_s = 0;      // 0: no limit
  double max_memory_gib = 0;  // 0: 90% of the machine's memory
};

boost::program_options::options_description watchdog_options(WatchdogSettings& s);
// Checks the values (InputError naming the option).
void check_watchdog_settings(const WatchdogSettings& s);

// Watches from construction to destruction (the simulation's scope).
class Watchdog {
 public:
  explicit Watchdog(const WatchdogSettings& settings);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch(double max_wall_s, double max_memory_bytes);
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tessera::app
