// NVSwitch: a crossbar with one ingress and one egress port per attached link. Every ingress
// has a finite buffer (backpressure to the sender when it is full); every egress port arbitrates
// round-robin among the ingress ports with a chunk for it (virtual output queues, so a busy
// output does not block chunks for other outputs) and serializes at its link's bandwidth.
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "models/link/fabric_port.h"

namespace tessera::models {

struct NvSwitchConfig {
  unsigned ports = 8;
  unsigned buffer_chunks = 8;                  // ingress buffer per port, in chunks
  sc_core::sc_time hop_latency = sc_core::sc_time(100, sc_core::SC_NS);  // crossbar pipeline
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

 private:
  std::vector<std::unique_ptr<IngressPort>> ingress_;
  std::vector<std::unique_ptr<EgressPort>> egress_;
  std::vector<std::vector<unsigned>> routes_;
};

}  // namespace tessera::models
