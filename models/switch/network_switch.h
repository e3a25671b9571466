// Network switch (InfiniBand or Ethernet): radix ports at a per-port bandwidth, a pipeline
// latency, finite ingress buffers whose backpressure is credit flow control (the sender's port
// stalls until the buffer has room: lossless, like IB credits or Ethernet PFC), routing tables
// with ECMP hashing.
//
// With in-network reduction (InfiniBand SHARP) the switch is an aggregation node: a
// NetworkReduce chunk names its aggregation tree (tlm/aggregation_tree.h); the switch absorbs
// the contributions its vertex of the tree waits for (members cabled to it, partial sums of
// child switches), then sends one partial sum to its parent, or, at the root, the sum down the
// tree. NetworkMulticast chunks (the sum on its way down) are copied to every child: to a child
// switch as NetworkMulticast, to a member's port as an ordinary chunk for that GPU.
#pragma once

#include <cstdint>

#include "models/switch/crossbar.h"
#include "models/switch/reduction_unit.h"
#include "tlm/payload_pool.h"

namespace tessera::models {

struct NetworkSwitchConfig {
  CrossbarConfig crossbar;
  bool in_network_reduction = false;      // SHARP aggregation
  uint32_t device = 0;                    // its device index in the network graph (trees name it)
  protocol::PayloadPool* pool = nullptr;  // for the copies sent down the tree
};

class NetworkSwitch : public Crossbar {
 public:
  NetworkSwitch(sc_core::sc_module_name name, const NetworkSwitchConfig& config)
      : Crossbar(name, config.crossbar), config_(config), unit_(config.pool) {}

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;

  bool in_network_reduction() const { return config_.in_network_reduction; }
  const ReductionUnit& reduction_unit() const { return unit_; }  // sums and copies made

 private:
  void aggregate(unsigned port, tlm::tlm_generic_payload& gp);
  // Sends the sum that `gp` carries to every child of this switch's vertex; releases gp.
  void spread(unsigned port, tlm::tlm_generic_payload& gp);

  NetworkSwitchConfig config_;
  ReductionUnit unit_;
};

}  // namespace tessera::models
