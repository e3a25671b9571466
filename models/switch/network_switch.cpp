#include "models/switch/network_switch.h"

#include <stdexcept>
#include <string>

#include "tlm/aggregation_tree.h"

namespace tessera::models {

void NetworkSwitch::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  const protocol::TransferPurpose purpose = protocol::fabric_transfer(gp).purpose;
  if (purpose == protocol::TransferPurpose::NetworkReduce) return aggregate(port, gp);
  if (purpose == protocol::TransferPurpose::NetworkMulticast) {
    ingress(port).packet_left(gp);
    return spread(port, gp);
  }
  forward(port, route(gp), gp);
}

void NetworkSwitch::aggregate(unsigned port, tlm::tlm_generic_payload& gp) {
  if (!config_.in_network_reduction)
    throw std::runtime_error(std::string(name()) + ": in-network reduction requested of a switch without it");
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  const protocol::AggregationTree::Vertex& v = ReductionUnit::vertex(t, config_.device, name());
  const uint64_t part = ReductionUnit::tree_part(t);
  ingress(port).packet_left(gp);  // the contribution is added into the unit's sum
  if (!unit_.contribute(t.flow, part, v.contributions)) {
    gp.release();
    return;
  }
  if (v.parent_port >= 0) {
    send(port, static_cast<unsigned>(v.parent_port), gp, unit_);  // the partial sum climbs
    return;
  }
  spread(port, gp);  // the root: the sum goes down the tree
}

void NetworkSwitch::spread(unsigned port, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer t = protocol::fabric_transfer(gp);
  const unsigned length = gp.get_data_length();
  const protocol::AggregationTree::Vertex& v = ReductionUnit::vertex(t, config_.device, name());
  gp.release();
  unit_.multicast_done();
  for (uint32_t c = v.first_child; c < v.first_child + v.children; ++c) {
    const protocol::AggregationTree::Child& child = t.tree->down[c];
    send(port, child.port, unit_.copy_down(t, length, child), unit_);
  }
}

}  // namespace tessera::models
