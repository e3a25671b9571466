#include "models/switch/nvswitch.h"

#include <stdexcept>
#include <string>

namespace tessera::models {

void NvSwitch::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.purpose == protocol::TransferPurpose::SwitchReduce) return reduce(port, gp);
  if (t.purpose == protocol::TransferPurpose::SwitchMulticast) return multicast(port, gp);
  forward(port, route(gp), gp);
}

void NvSwitch::reduce(unsigned port, tlm::tlm_generic_payload& gp) {
  if (!config_.in_switch_reduction)
    throw std::runtime_error(std::string(name()) + ": in-switch reduction requested of a switch without it");
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  const uint64_t part = ReductionUnit::switch_part(t);
  // Every contribution is added into the reduction unit's sum and leaves the ingress buffer.
  ingress(port).packet_left(gp);
  if (!unit_.contribute(t.flow, part, t.member_count)) {
    gp.release();
    return;
  }
  // The last contribution's payload carries the sum from the reduction unit to the owner.
  send(port, route(gp), gp, unit_);
}

void NvSwitch::multicast(unsigned port, tlm::tlm_generic_payload& gp) {
  if (!config_.in_switch_reduction || config_.pool == nullptr)
    throw std::runtime_error(std::string(name()) + ": multicast requested of a switch without it");
  const protocol::FabricTransfer t = protocol::fabric_transfer(gp);
  const unsigned length = gp.get_data_length();
  ingress(port).packet_left(gp);
  gp.release();
  unit_.multicast_done();
  for (uint32_t m = 0; m < t.member_count; ++m) {
    tlm::tlm_generic_payload& copy = unit_.copy(t, length);
    protocol::fabric_transfer(copy).destination = static_cast<uint32_t>(t.members[m]);
    send(port, route(copy), copy, unit_);
  }
}

}  // namespace tessera::models
