// The progress line a long run shows on stderr when stderr is a terminal, and nothing otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "models/gpu/command_processor.h"

namespace tessera::app {

// Where a run stands, for one progress line.
struct ProgressState {
  double simulated_s = 0;   // simulated time so far
  uint64_t done = 0;        // ops completed, every rank and iteration
  uint64_t total = 0;       // ops of the whole run
  uint64_t iterations = 1;  // iterations every rank runs
  double elapsed_s = 0;     // wall time since the simulation started
  uint64_t events = 0;      // kernel events so far (SystemC delta cycles)
};

// "simulated 12.345 ms, iteration 2 of 3, 41% of 1.2 M ops, 3.1 M events/s, about 25 s left":
// what is left is the wall time so far scaled by the ops left over the ops done.
std::string progress_line(const ProgressState& s);

// Counts completed ops and prints progress_line about once a second (the wall clock is read
// only every 1,024 ops, so the hot path stays cheap); clears the line at the end.
class TerminalProgress : public models::ProgressMonitor {
 public:
  TerminalProgress(uint64_t total_ops, uint64_t iterations, bool enabled);
  ~TerminalProgress() override;
  void op_completed() override;

 private:
  ProgressState state_;
  bool enabled_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace tessera::app
