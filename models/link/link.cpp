#include "models/link/link.h"

#include "tlm/extensions.h"

namespace tessera::models {

Link::Link(sc_core::sc_module_name name, const protocol::LinkTiming& timing, std::string kind)
    : sc_module(name), in("in"), out("out"), timing_(timing), kind_(std::move(kind)) {
  in.register_nb_transport_fw(this, &Link::nb_transport_fw);
  out.register_nb_transport_bw(this, &Link::nb_transport_bw);
}

void Link::record_activity(sc_core::sc_time bucket_width) { bucket_ = bucket_width; }

tlm::tlm_sync_enum Link::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                         sc_core::sc_time& delay) {
  // The egress port annotated the serialization time; the chunk lands after the latency too.
  if (phase == tlm::BEGIN_REQ) delay += timing_.latency;
  tlm::tlm_sync_enum status = out->nb_transport_fw(gp, phase, delay);
  return status;
}

tlm::tlm_sync_enum Link::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                         sc_core::sc_time& delay) {
  if (phase == tlm::BEGIN_RESP) {
    // The chunk arrived whole at the far end: account for it once.
    const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
    const uint64_t bytes = t.bytes;
    bytes_ += bytes;
    ++chunks_;
    const sc_core::sc_time serialization = timing_.serialization(bytes, t.wire_factor);
    busy_ += serialization;
    if (bucket_ != sc_core::SC_ZERO_TIME) {
      // Attribute the bytes to the bucket in which serialization started.
      const sc_core::sc_time now = sc_core::sc_time_stamp();
      const sc_core::sc_time start = now - timing_.latency - serialization;
      const size_t index = static_cast<size_t>(start.value() / bucket_.value());
      if (activity_.size() <= index) activity_.resize(index + 1, 0);
      activity_[index] += bytes;
    }
  }
  return in->nb_transport_bw(gp, phase, delay);
}

}  // namespace tessera::models
