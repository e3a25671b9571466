#include "models/link/link.h"

namespace tessera::models {

void Link::carried(uint64_t bytes, double protocol_factor) {
  bytes_ += bytes;
  ++chunks_;
  const sc_core::sc_time serialization = timing_.serialization(bytes, protocol_factor);
  busy_ += serialization;
  if (bucket_ != sc_core::SC_ZERO_TIME) {
    // Attribute the bytes to the bucket in which serialization started.
    const sc_core::sc_time start = sc_core::sc_time_stamp() - timing_.latency - serialization;
    const size_t index = static_cast<size_t>(start.value() / bucket_.value());
    if (activity_.size() <= index) activity_.resize(index + 1, 0);
    activity_[index] += bytes;
  }
}

}  // namespace tessera::models
