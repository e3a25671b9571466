// A point-to-point link, one direction: the wire between an egress port and an ingress port.
// It owns the timing (bandwidth, latency, per-packet overhead) that the egress port uses to
// serialize, adds the propagation latency to every request, and counts the bytes it carries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "tlm/link_timing.h"
#include "tlm/sockets.h"

namespace tessera::models {

class Link : public sc_core::sc_module {
 public:
  protocol::TargetSocket<Link> in;
  protocol::InitiatorSocket<Link> out;

  Link(sc_core::sc_module_name name, const protocol::LinkTiming& timing, std::string kind);

  const protocol::LinkTiming& timing() const { return timing_; }
  const std::string& link_kind() const { return kind_; }
  uint64_t bytes_carried() const { return bytes_; }
  uint64_t chunks_carried() const { return chunks_; }
  // Time the link spent serializing (sum of serialization times of the chunks it carried).
  sc_core::sc_time busy_time() const { return busy_; }

  // Optional per-bucket byte counts for trace counters (enabled by the simulation when a trace
  // is requested). Bucket i covers [i*width, (i+1)*width).
  void record_activity(sc_core::sc_time bucket_width);
  const std::vector<uint64_t>& activity() const { return activity_; }
  sc_core::sc_time activity_bucket() const { return bucket_; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);

  protocol::LinkTiming timing_;
  std::string kind_;
  uint64_t bytes_ = 0;
  uint64_t chunks_ = 0;
  sc_core::sc_time busy_;
  sc_core::sc_time bucket_;
  std::vector<uint64_t> activity_;
};

}  // namespace tessera::models
