#include "models/switch/nvswitch.h"

#include <stdexcept>
#include <string>

#include "tlm/extensions.h"

namespace tessera::models {

NvSwitch::NvSwitch(sc_core::sc_module_name name, const NvSwitchConfig& config)
    : sc_module(name), config_(config) {
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

unsigned NvSwitch::route(const protocol::FabricTransfer& t, uint32_t destination) const {
  if (destination >= routes_.size() || routes_[destination].empty())
    throw std::runtime_error(std::string(name()) + ": no route to GPU " +
                             std::to_string(destination));
  const std::vector<unsigned>& choices = routes_[destination];
  return choices.size() == 1 ? choices[0] : choices[(t.flow * 31 + t.chunk) % choices.size()];
}

void NvSwitch::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.purpose == protocol::TransferPurpose::SwitchReduce) return reduce(port, gp);
  if (t.purpose == protocol::TransferPurpose::SwitchMulticast) return multicast(port, gp);
  egress_[route(t, t.destination)]->enqueue(port, gp, *ingress_[port]);
}

void NvSwitch::reduce(unsigned port, tlm::tlm_generic_payload& gp) {
  if (!config_.in_switch_reduction)
    throw std::runtime_error(std::string(name()) + ": in-switch reduction requested of a switch without it");
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  // The part key: the destination (owner of the reduced shard), step and chunk.
  const uint64_t part = (uint64_t(t.destination) << 48) ^ (uint64_t(t.step) << 32) ^ t.chunk;
  // Every contribution is added into the reduction unit's sum and leaves the ingress buffer.
  ingress_[port]->packet_left(gp);
  if (!reductions_.contribute(t.flow, part, t.member_count)) {
    gp.release();
    return;
  }
  ++reduced_;
  // The last contribution's payload carries the sum from the reduction unit to the owner.
  egress_[route(t, t.destination)]->enqueue(port, gp, copies_);
}

void NvSwitch::multicast(unsigned port, tlm::tlm_generic_payload& gp) {
  if (!config_.in_switch_reduction || config_.pool == nullptr)
    throw std::runtime_error(std::string(name()) + ": multicast requested of a switch without it");
  const protocol::FabricTransfer t = protocol::fabric_transfer(gp);
  const unsigned length = gp.get_data_length();
  ingress_[port]->packet_left(gp);
  gp.release();
  ++multicast_;
  for (uint32_t m = 0; m < t.member_count; ++m) {
    tlm::tlm_generic_payload* copy = config_.pool->acquire();
    protocol::FabricTransfer& c = protocol::fabric_transfer(*copy);
    c = t;
    c.destination = static_cast<uint32_t>(t.members[m]);
    copy->set_data_length(length);
    egress_[route(c, c.destination)]->enqueue(port, *copy, copies_);
  }
}

}  // namespace tessera::models
