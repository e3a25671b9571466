// NVSwitch: the crossbar of an NVLink fabric (inside a node, or a second tier across nodes).
//
// With in-switch reduction (NVLink SHARP, NVSwitch gen3) the switch also takes SwitchReduce
// chunks: it counts the members' contributions to each chunk (ReductionTable) and sends the
// sum to the chunk's destination once the last one has arrived; and SwitchMulticast chunks,
// which it copies to every member (payloads from the pool, nothing allocated per chunk).
#pragma once

#include "models/switch/crossbar.h"
#include "models/switch/reduction_table.h"
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
      : Crossbar(name, config.crossbar), config_(config) {}

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;

  bool in_switch_reduction() const { return config_.in_switch_reduction; }
  uint64_t chunks_reduced() const { return reduced_; }
  uint64_t chunks_multicast() const { return multicast_; }
  size_t reductions_pending() const { return reductions_.pending(); }

 private:
  // Reduced sums and multicast copies leave from the switch's reduction/multicast unit, not
  // from an ingress buffer: their leaving frees nothing.
  struct CopySource : PacketSource {
    void packet_left(tlm::tlm_generic_payload&) override {}
  };
  void reduce(unsigned port, tlm::tlm_generic_payload& gp);
  void multicast(unsigned port, tlm::tlm_generic_payload& gp);

  NvSwitchConfig config_;
  ReductionTable reductions_;
  CopySource copies_;
  uint64_t reduced_ = 0, multicast_ = 0;
};

}  // namespace tessera::models
