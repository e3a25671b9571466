// The progress line of a long run (sc_main/progress_line.h).
#include "sc_main/progress_line.h"

#include <gtest/gtest.h>

namespace tessera::app {
namespace {

TEST(ProgressLine, SaysSimulatedTimeShareOfOpsRateAndWhatIsLeft) {
  ProgressState s;
  s.simulated_s = 0.012345;
  s.done = 250'000;
  s.total = 1'000'000;
  s.elapsed_s = 10;
  s.events = 31'000'000;
  EXPECT_EQ(progress_line(s), "simulated 12.345 ms, 25% of 1.0 M ops, 3.1 M events/s, about 30 s left");
}

TEST(ProgressLine, NamesTheIterationWhenThereAreSeveral) {
  ProgressState s;
  s.done = 1'500;
  s.total = 3'000;
  s.iterations = 3;
  s.elapsed_s = 150;
  s.events = 3'000;
  EXPECT_EQ(progress_line(s), "simulated 0.000 ms, iteration 2 of 3, 50% of 3000 ops, 20 events/s, about 2 min 30 s left");
}

TEST(ProgressLine, NothingLeftToEstimateAtTheStartOrTheEnd) {
  ProgressState s;
  s.total = 100;
  EXPECT_EQ(progress_line(s), "simulated 0.000 ms, 0% of 100 ops");
  s.done = 100;
  s.elapsed_s = 2;
  EXPECT_EQ(progress_line(s), "simulated 0.000 ms, 100% of 100 ops, 0 events/s");
}

}  // namespace
}  // namespace tessera::app
