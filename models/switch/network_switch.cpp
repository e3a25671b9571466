#include "models/switch/network_switch.h"

#include <stdexcept>
#include <string>

#include "tlm/aggregation_tree.h"

namespace tessera::models {

namespace {
const protocol::AggregationTree::Vertex& vertex(const protocol::FabricTransfer& t, uint32_t device,
                                                const char* name) {
  const protocol::AggregationTree::Vertex* v = t.tree != nullptr ? t.tree->at(device) : nullptr;
  if (v == nullptr)
    throw std::runtime_error(std::string(name) + ": an in-network reduction chunk of a tree that does not cross this switch");
  return *v;
}
}  // namespace

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
  const protocol::AggregationTree::Vertex& v = vertex(t, config_.device, name());
  // The part key: the tree (several trees of one collective may share a switch), step, chunk.
  const uint64_t part = (uint64_t(t.tree->id) << 40) ^ (uint64_t(t.step) << 32) ^ t.chunk;
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
  const protocol::AggregationTree::Vertex& v = vertex(t, config_.device, name());
  gp.release();
  unit_.multicast_done();
  for (uint32_t c = v.first_child; c < v.first_child + v.children; ++c) {
    const protocol::AggregationTree::Child& child = t.tree->down[c];
    tlm::tlm_generic_payload& copy = unit_.copy(t, length);
    protocol::FabricTransfer& ct = protocol::fabric_transfer(copy);
    if (child.rank >= 0) {  // a member: an ordinary chunk for its GPU from here on
      ct.purpose = protocol::TransferPurpose::Collective;
      ct.destination = static_cast<uint32_t>(child.rank);
      ct.tree = nullptr;
    } else {
      ct.purpose = protocol::TransferPurpose::NetworkMulticast;
    }
    send(port, child.port, copy, unit_);
  }
}

}  // namespace tessera::models
