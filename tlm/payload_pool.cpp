#include "tlm/payload_pool.h"

namespace tessera::protocol {

PayloadPool::~PayloadPool() {
  // Payloads still referenced elsewhere at shutdown are simply destroyed with the pool.
  for (auto& p : all_) p->set_mm(nullptr);
}

tlm::tlm_generic_payload* PayloadPool::acquire() {
  tlm::tlm_generic_payload* gp;
  if (!free_.empty()) {
    gp = free_.back();
    free_.pop_back();
  } else {
    all_.push_back(std::make_unique<Payload>(this));
    gp = all_.back().get();
  }
  gp->set_command(tlm::TLM_WRITE_COMMAND);
  gp->set_address(0);
  gp->set_data_ptr(nullptr);
  gp->set_data_length(0);
  gp->set_streaming_width(0);
  gp->set_byte_enable_ptr(nullptr);
  gp->set_dmi_allowed(false);
  gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp->acquire();
  return gp;
}

void PayloadPool::free(tlm::tlm_generic_payload* payload) {
  // Extensions stay attached (set_extension, not set_auto_extension): reset() keeps them.
  payload->reset();
  free_.push_back(payload);
}

}  // namespace tessera::protocol
