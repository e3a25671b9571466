// A point-to-point link, one direction: the wire between an egress port and an ingress port.
// It holds the timing (bandwidth, latency, per-packet overhead) the egress port serializes and
// delays chunks with, and counts the bytes it carries. The egress port's initiator socket binds
// straight to the ingress port's target socket; the link is the egress port's wire, not a
// module of its own (a 16,384-GPU platform has about 300,000 of them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "tlm/link_timing.h"

namespace tessera::models {

class Link {
 public:
  Link(std::string name, const protocol::LinkTiming& timing, std::string kind)
      : name_(std::move(name)), timing_(timing), kind_(std::move(kind)) {}

  const std::string& name() const { return name_; }
  const protocol::LinkTiming& timing() const { return timing_; }
  const std::string& link_kind() const { return kind_; }
  uint64_t bytes_carried() const { return bytes_; }
  uint64_t chunks_carried() const { return chunks_; }
  // Time the link spent serializing (sum of serialization times of the chunks it carried).
  sc_core::sc_time busy_time() const { return busy_; }

  // Optional per-bucket byte counts for trace counters (enabled by the simulation when a trace
  // is requested). Bucket i covers [i*width, (i+1)*width).
  void record_activity(sc_core::sc_time bucket_width) { bucket_ = bucket_width; }
  const std::vector<uint64_t>& activity() const { return activity_; }
  sc_core::sc_time activity_bucket() const { return bucket_; }

  // A chunk of `bytes` (on the wire: scaled by the protocol factor) arrived whole at the far end
  // at the current time.
  void carried(uint64_t bytes, double protocol_factor = 1.0);

 private:
  std::string name_;
  protocol::LinkTiming timing_;
  std::string kind_;
  uint64_t bytes_ = 0;
  uint64_t chunks_ = 0;
  sc_core::sc_time busy_;
  sc_core::sc_time bucket_;
  std::vector<uint64_t> activity_;
};

}  // namespace tessera::models
