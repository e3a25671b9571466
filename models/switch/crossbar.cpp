#include "models/switch/crossbar.h"

#include <stdexcept>

namespace tessera::models {

Crossbar::Crossbar(sc_core::sc_module_name name, const CrossbarConfig& config) : sc_module(name) {
  ingress_.reserve(config.ports);
  egress_.reserve(config.ports);
  for (unsigned p = 0; p < config.ports; ++p) {
    ingress_.push_back(std::make_unique<IngressPort>(("in" + std::to_string(p)).c_str(), *this,
                                                     p, config.buffer_chunks));
    egress_.push_back(
        std::make_unique<EgressPort>(("out" + std::to_string(p)).c_str(), config.ports));
    egress_.back()->set_hop_latency(config.hop_latency);
  }
}

unsigned Crossbar::route(tlm::tlm_generic_payload& gp) const {
  if (router_ == nullptr) throw std::logic_error(std::string(name()) + " has no router");
  const unsigned out = router_->route(protocol::fabric_transfer(gp));
  if (out >= egress_.size())
    throw std::logic_error(std::string(name()) + ": route to port " + std::to_string(out) +
                           " of " + std::to_string(egress_.size()));
  return out;
}

void Crossbar::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  forward(port, route(gp), gp);
}

}  // namespace tessera::models
