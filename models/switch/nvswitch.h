// NVSwitch: the crossbar of an NVLink fabric (inside a node, or a second tier across nodes).
//
// With in-switch reduction (NVLink SHARP, NVSwitch gen3) the switch also takes SwitchReduce
// chunks: it counts the members' contributions to each chunk (ReductionUnit) and sends the
// sum to the chunk's destination once the last one has arrived; and SwitchMulticast chunks,
// which it copies to every member (payloads from the pool, nothing allocated per chunk).
#pragma once

#include "models/switch/crossbar.h"
#include "models/switch/reduction_unit.h"
#include "tlm/payload_pool.h"

namespace tessera::models {

struct NvSwitchConfig {
  CrossbarConfig crossbar;
  bool in_switch_reduction = false;       // NVLink SHARP: reduction and multicast
  protocol::PayloadPool* pool = nullptr;  // for multicast copies (in_switch_reduction)
};

class NvSwitch : public Crossbar {
 public:
  NvSwitch(sc_core::sc_module_name name, const NvSwitchConfig& config)
      : Crossbar(name, config.crossbar), config_(config), unit_(config.pool) {}

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;

  bool in_switch_reduction() const { return config_.in_switch_reduction; }
  const ReductionUnit& reduction_unit() const { return unit_; }  // sums and copies made

 private:
  void reduce(unsigned port, tlm::tlm_generic_payload& gp);
  void multicast(unsigned port, tlm::tlm_generic_payload& gp);

  NvSwitchConfig config_;
  ReductionUnit unit_;
};

}  // namespace tessera::models
