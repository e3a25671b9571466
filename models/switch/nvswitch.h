// NVSwitch: a crossbar with one ingress and one egress port per attached link. Every ingress
// has a finite buffer (backpressure to the sender when it is full); every egress port arbitrates
// round-robin among the ingress ports with a chunk for it (virtual output queues, so a busy
// output does not block chunks for other outputs) and serializes at its link's bandwidth.
//
// With in-switch reduction (NVLink SHARP, NVSwitch gen3) the switch also takes SwitchReduce
// chunks: it counts the members' contributions to each chunk (ReductionTable) and sends the
// sum to the chunk's destination once the last one has arrived; and SwitchMulticast chunks,
// which it copies to every member (payloads from the pool, nothing allocated per chunk).
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "models/link/fabric_port.h"
#include "models/switch/reduction_table.h"
#include "tlm/extensions.h"
#include "tlm/payload_pool.h"

namespace tessera::models {

struct NvSwitchConfig {
  unsigned ports = 8;
  unsigned buffer_chunks = 8;                  // ingress buffer per port, in chunks
  sc_core::sc_time hop_latency = sc_core::sc_time(100, sc_core::SC_NS);  // crossbar pipeline
  bool in_switch_reduction = false;            // NVLink SHARP: reduction and multicast
  protocol::PayloadPool* pool = nullptr;       // for multicast copies (in_switch_reduction)
};

class NvSwitch : public sc_core::sc_module, public PacketSink {
 public:
  NvSwitch(sc_core::sc_module_name name, const NvSwitchConfig& config);

  IngressPort& ingress(unsigned port) { return *ingress_[port]; }
  EgressPort& egress(unsigned port) { return *egress_[port]; }
  unsigned ports() const { return static_cast<unsigned>(ingress_.size()); }

  // Routing table: chunks for GPU `rank` leave through one of `ports` (several: ECMP by flow).
  void set_route(unsigned rank, std::vector<unsigned> ports);

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
  unsigned route(const protocol::FabricTransfer& t, uint32_t destination) const;
  void reduce(unsigned port, tlm::tlm_generic_payload& gp);
  void multicast(unsigned port, tlm::tlm_generic_payload& gp);

  NvSwitchConfig config_;
  ReductionTable reductions_;
  CopySource copies_;
  uint64_t reduced_ = 0, multicast_ = 0;
  std::vector<std::unique_ptr<IngressPort>> ingress_;
  std::vector<std::unique_ptr<EgressPort>> egress_;
  std::vector<std::vector<unsigned>> routes_;
};

}  // namespace tessera::models
