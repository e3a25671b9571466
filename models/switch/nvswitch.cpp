#include "models/switch/nvswitch.h"

#include <stdexcept>
#include <string>

#include "tlm/extensions.h"

namespace tessera::models {

NvSwitch::NvSwitch(sc_core::sc_module_name name, const NvSwitchConfig& config)
    : sc_module(name) {
  for (unsigned p = 0; p < config.ports; ++p) {
    ingress_.push_back(std::make_unique<IngressPort>(("in" + std::to_string(p)).c_str(), *this,
                                                     p, config.buffer_chunks));
    egress_.push_back(
        std::make_unique<EgressPort>(("out" + std::to_string(p)).c_str(), config.ports));
    egress_.back()->set_hop_latency(config.hop_latency);
  }
}

void NvSwitch::set_route(unsigned rank, std::vector<unsigned> ports) {
  if (routes_.size() <= rank) routes_.resize(rank + 1);
  routes_[rank] = std::move(ports);
}

void NvSwitch::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.destination >= routes_.size() || routes_[t.destination].empty())
    throw std::runtime_error(std::string(name()) + ": no route to GPU " +
                             std::to_string(t.destination));
  const std::vector<unsigned>& choices = routes_[t.destination];
  const unsigned out = choices.size() == 1
                           ? choices[0]
                           : choices[(t.flow * 31 + t.chunk) % choices.size()];
  egress_[out]->enqueue(port, gp, *ingress_[port]);
}

}  // namespace tessera::models
