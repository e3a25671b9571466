#include "models/switch/root_complex.h"

namespace tessera::models {

RootComplex::RootComplex(sc_core::sc_module_name name, const RootComplexConfig& config)
    : Crossbar(name, config.crossbar),
      peer_through_memory_(config.peer_through_memory),
      memory_(std::make_unique<HostMemory>("memory", config.memory)) {}

void RootComplex::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  const unsigned out = route(gp);
  if (!peer_through_memory_) return forward(port, out, gp);
  // Written into host memory and read back out; the chunk keeps its ingress slot meanwhile.
  memory_->stage(gp, 2, *this, (uint32_t(port) << 16) | out);
}

void RootComplex::memory_done(tlm::tlm_generic_payload& gp, uint32_t tag) {
  forward(tag >> 16, tag & 0xffffu, gp);
}

}  // namespace tessera::models
