#include "tlm/time_span.h"

#include <cstdio>
#include <exception>

namespace tessera::protocol {
namespace {

std::exception_ptr& raised() {
  static std::exception_ptr error;
  return error;
}

}  // namespace

void time_span_exceeded(double seconds, const std::string& what) {
  char text[64];
  std::snprintf(text, sizeof text, "%g s", seconds);
  const TimeSpanError error(what + " takes " + text + " at " + sc_core::sc_time_stamp().to_string() +
                            ", beyond the 2^64 ps (213.5 days) a simulation can span (docs/limits.md)");
  raised() = std::make_exception_ptr(error);
  throw error;
}

void rethrow_time_span_error() {
  if (raised()) std::rethrow_exception(raised());
}

}  // namespace tessera::protocol
