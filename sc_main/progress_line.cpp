#include "sc_main/progress_line.h"

#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sc_main/report.h"

namespace tessera::app {

namespace {

// 1234567 -> "1.2 M"; below ten thousand, the number.
std::string count(double n) {
  if (n >= 1e9) return format("%.1f G", n / 1e9);
  if (n >= 1e6) return format("%.1f M", n / 1e6);
  if (n >= 1e4) return format("%.0f k", n / 1e3);
  return format("%.0f", n);
}

// 75 -> "1 min 15 s"
std::string duration(double s) {
  if (s < 60) return format("%.0f s", s);
  if (s < 3600) return format("%.0f min ", std::floor(s / 60)) + format("%.0f s", std::fmod(s, 60));
  return format("%.0f h ", std::floor(s / 3600)) + format("%.0f min", std::fmod(s, 3600) / 60);
}

}  // namespace

std::string progress_line(const ProgressState& s) {
  const double fraction = s.total > 0 ? double(s.done) / double(s.total) : 0;
  std::string line = "simulated " + format("%.3f ms", s.simulated_s * 1e3);
  if (s.iterations > 1) {
    const uint64_t per_iteration = s.total / s.iterations;
    const uint64_t at = per_iteration > 0 ? std::min(s.iterations, s.done / per_iteration + 1) : 1;
    line += ", iteration " + std::to_string(at) + " of " + std::to_string(s.iterations);
  }
  line += format(", %.0f%%", 100 * fraction) + " of " + count(double(s.total)) + " ops";
  if (s.elapsed_s > 0) line += ", " + count(double(s.events) / s.elapsed_s) + " events/s";
  if (s.done > 0 && s.done < s.total)
    line += ", about " + duration(s.elapsed_s * double(s.total - s.done) / double(s.done)) + " left";
  return line;
}

TerminalProgress::TerminalProgress(uint64_t total_ops, uint64_t iterations, bool enabled) : enabled_(enabled) {
  state_.total = total_ops;
  state_.iterations = iterations;
  start_ = last_ = std::chrono::steady_clock::now();
}

void TerminalProgress::op_completed() {
  ++state_.done;
  if (!enabled_ || (state_.done & 1023) != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(1)) return;
  last_ = now;
  printed_ = true;
  state_.simulated_s = sc_core::sc_time_stamp().to_seconds();
  state_.elapsed_s = std::chrono::duration<double>(now - start_).count();
  state_.events = sc_core::sc_delta_count();
  std::fprintf(stderr, "\r  %-100s", progress_line(state_).c_str());
  std::fflush(stderr);
}

TerminalProgress::~TerminalProgress() {
  if (printed_) std::fprintf(stderr, "\r%102s\r", "");
}

}  // namespace tessera::app
