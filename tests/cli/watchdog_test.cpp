// The watchdog's default memory limit follows the run's size, and a process forked right after a
// watchdog starts can allocate (sc_main/watchdog.h).
#include "sc_main/watchdog.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace tessera::app {
namespace {

constexpr double kGib = double(1 << 30);

double machine() { return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)); }

TEST(WatchdogMemory, ExpectationAboveWhatLimitsMdMeasured) {
  // docs/limits.md: 1,024 GPUs (128 nodes) of GPT-3 175B, 48.9 M ops, held 0.92 GiB; 4,096 GPUs
  // (512 nodes) of two 1.3B layers held 4.2 GiB.
  EXPECT_GT(expected_memory_bytes(128, 48'900'000), 0.92 * kGib);
  EXPECT_GT(expected_memory_bytes(512, 0), 4.2 * kGib);
  EXPECT_LT(expected_memory_bytes(128, 48'900'000), 4 * 0.92 * kGib);  // not so loose it never stops
}

TEST(WatchdogMemory, GrowsWithNodePairsAndOps) {
  EXPECT_DOUBLE_EQ(expected_memory_bytes(2, 0) - expected_memory_bytes(1, 0), 3 * 16.0 * 1024);
  EXPECT_DOUBLE_EQ(expected_memory_bytes(1, 1000) - expected_memory_bytes(1, 0), 64.0 * 1000);
}

TEST(WatchdogMemory, LimitIsFourTimesTheExpectationWithinTheMachine) {
  EXPECT_DOUBLE_EQ(memory_limit_bytes(0), std::min(2 * kGib, 0.9 * machine()));
  EXPECT_DOUBLE_EQ(memory_limit_bytes(1e15), 0.9 * machine());
  const double mid = 0.1 * machine();
  if (4 * mid > 2 * kGib) {
    EXPECT_DOUBLE_EQ(memory_limit_bytes(mid), 4 * mid);
  }
}

// run_without_rtl forks its child right after the run's watchdog starts; a child that inherited
// an allocator lock the starting thread held would hang at its first allocation (seen with the
// address sanitizer's allocator). Each child allocates and frees, and must exit within 10 s.
TEST(Watchdog, AProcessForkedRightAfterItStartsCanAllocate) {
  for (int i = 0; i < 50; ++i) {
    const Watchdog watchdog(WatchdogSettings{}, 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string text;
      for (int k = 0; k < 1000; ++k) text += std::to_string(k);
      ::_exit(text.empty() ? 1 : 0);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        FAIL() << "child " << i << " forked right after the watchdog started did not finish";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i;
  }
}

}  // namespace
}  // namespace tessera::app
