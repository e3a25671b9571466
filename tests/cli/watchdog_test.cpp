// The watchdog's default memory limit follows the run's size (sc_main/watchdog.h).
#include "sc_main/watchdog.h"

#include <unistd.h>

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

}  // namespace
}  // namespace tessera::app
