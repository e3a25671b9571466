// The compute unit of a switch that reduces data (NVLink SHARP in an NVSwitch, InfiniBand SHARP
// in a network switch). Contributions are absorbed into it (they leave their ingress buffer at
// once) and counted per reduced chunk (ReductionTable); the sum and multicast copies leave from
// the unit, so their leaving frees no buffer slot. Copies come from the payload pool: nothing
// is allocated per chunk in steady state.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/link/fabric_port.h"
#include "models/switch/reduction_table.h"
#include "tlm/aggregation_tree.h"
#include "tlm/extensions.h"
#include "tlm/payload_pool.h"

namespace tessera::models {

class ReductionUnit : public PacketSource {
 public:
  explicit ReductionUnit(protocol::PayloadPool* pool) : pool_(pool) {}

  // One contribution to chunk (flow, part) of a reduction of `contributions`. True when it was
  // the last: the caller's payload now carries the sum.
  bool contribute(uint64_t flow, uint64_t part, uint32_t contributions) {
    if (!table_.contribute(flow, part, contributions)) return false;
    ++reduced_;
    return true;
  }
  // A payload from the pool carrying `t` (`length` bytes), for one multicast copy.
  tlm::tlm_generic_payload& copy(const protocol::FabricTransfer& t, unsigned length) {
    if (pool_ == nullptr) throw std::logic_error("a reduction unit without a payload pool cannot copy");
    tlm::tlm_generic_payload* c = pool_->acquire();
    protocol::fabric_transfer(*c) = t;
    c->set_data_length(length);
    return *c;
  }
  // A copy of the sum `t` for `child` of its aggregation tree's vertex: a NetworkMulticast
  // chunk for a child switch, an ordinary chunk for a member's GPU.
  tlm::tlm_generic_payload& copy_down(const protocol::FabricTransfer& t, unsigned length,
                                      const protocol::AggregationTree::Child& child) {
    tlm::tlm_generic_payload& c = copy(t, length);
    protocol::FabricTransfer& ct = protocol::fabric_transfer(c);
    if (child.rank >= 0) {
      ct.purpose = protocol::TransferPurpose::Collective;
      ct.destination = static_cast<uint32_t>(child.rank);
      ct.tree = nullptr;
    } else {
      ct.purpose = protocol::TransferPurpose::NetworkMulticast;
    }
    return c;
  }
  void multicast_done() { ++multicast_; }

  // The reduced chunk a contribution belongs to. In a switch of the NVLink domain: the owner of
  // the reduced shard, step and chunk. In an aggregation tree: the tree (several trees of one
  // collective may share a switch), step and chunk.
  static uint64_t switch_part(const protocol::FabricTransfer& t) {
    return (uint64_t(t.destination) << 48) ^ (uint64_t(t.step) << 32) ^ t.chunk;
  }
  static uint64_t tree_part(const protocol::FabricTransfer& t) {
    return (uint64_t(t.tree->id) << 40) ^ (uint64_t(t.step) << 32) ^ t.chunk;
  }
  // The vertex of network switch `device` in the chunk's aggregation tree; `who` names the
  // switch in the error for a tree that does not cross it.
  static const protocol::AggregationTree::Vertex& vertex(const protocol::FabricTransfer& t, uint32_t device,
                                                         const char* who) {
    const protocol::AggregationTree::Vertex* v = t.tree != nullptr ? t.tree->at(device) : nullptr;
    if (v == nullptr)
      throw std::runtime_error(std::string(who) + ": an in-network reduction chunk of a tree that does not cross this switch");
    return *v;
  }

  void packet_left(tlm::tlm_generic_payload&) override {}

  uint64_t reduced() const { return reduced_; }
  uint64_t multicast() const { return multicast_; }
  size_t pending() const { return table_.pending(); }

 private:
  protocol::PayloadPool* pool_;
  ReductionTable table_;
  uint64_t reduced_ = 0, multicast_ = 0;
};

}  // namespace tessera::models
