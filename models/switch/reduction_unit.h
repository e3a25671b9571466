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
  void multicast_done() { ++multicast_; }

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
