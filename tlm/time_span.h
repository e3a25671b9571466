// Simulated time is a 64-bit count of picoseconds: 2^64 ps, about 213.5 days, is all a run can
// span. A duration computed during a run (a kernel's time from its FLOPs) that would carry the
// clock past it ends the run with a TimeSpanError instead of wrapping the count and giving a
// result that looks valid (docs/limits.md).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include <systemc>

namespace tessera::protocol {

class TimeSpanError : public std::range_error {
 public:
  using std::range_error::range_error;
};

// Raises the TimeSpanError for `what` taking `seconds` from now (for delay_after_now).
[[noreturn]] void time_span_exceeded(double seconds, const std::string& what);

// `seconds` from now as an sc_time, rounded up to the resolution. Raises TimeSpanError naming
// describe() (called only then) when seconds is not a finite non-negative number or ends past
// the span.
template <typename Describe>
sc_core::sc_time delay_after_now(double seconds, Describe&& describe) {
  const double ticks = std::ceil(seconds / sc_core::sc_get_time_resolution().to_seconds());
  const sc_dt::uint64 left = ~sc_dt::uint64(0) - sc_core::sc_time_stamp().value();
  if (!(ticks >= 0 && ticks < double(left))) time_span_exceeded(seconds, describe());
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(ticks));
}

// SystemC reports an exception thrown in a process as an sc_report from sc_start(): this
// rethrows the TimeSpanError a process raised, if one did, as itself.
void rethrow_time_span_error();

}  // namespace tessera::protocol
