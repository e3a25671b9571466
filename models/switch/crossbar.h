// A crossbar: the forwarding core shared by every switching device (NVSwitch, PCIe switch, the
// host's root complex, NIC, network switch). One ingress and one egress port per attached link;
// every ingress has a finite buffer (backpressure to the sender when it is full); every egress
// port arbitrates round-robin among the ingress ports with a chunk for it (virtual output
// queues, so a busy output does not block chunks for other outputs) and serializes at its
// link's bandwidth. Where a chunk goes is the router's decision (routing tables live with the
// platform, which computed them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/link/fabric_port.h"
#include "tlm/extensions.h"

namespace tessera::models {

// Picks the output port of a device for a chunk. The first hop may also record its choice of
// gateway in the transfer, hence the non-const argument.
class Router {
 public:
  virtual ~Router() = default;
  virtual unsigned route(protocol::FabricTransfer& transfer) const = 0;
};

struct CrossbarConfig {
  unsigned ports = 8;
  unsigned buffer_chunks = 8;                                            // per ingress port
  sc_core::sc_time hop_latency = sc_core::sc_time(100, sc_core::SC_NS);  // pipeline per hop
};

class Crossbar : public sc_core::sc_module, public PacketSink {
 public:
  Crossbar(sc_core::sc_module_name name, const CrossbarConfig& config);

  IngressPort& ingress(unsigned port) { return *ingress_[port]; }
  EgressPort& egress(unsigned port) { return *egress_[port]; }
  unsigned ports() const { return static_cast<unsigned>(ingress_.size()); }
  void set_router(const Router& router) { router_ = &router; }

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;

 protected:
  // Queues the chunk that arrived on `in` at output `out`.
  void forward(unsigned in, unsigned out, tlm::tlm_generic_payload& gp) {
    egress_[out]->enqueue(in, gp, *ingress_[in]);
  }
  // Queues a chunk that does not hold an ingress buffer slot (`source` learns when it leaves).
  void send(unsigned in, unsigned out, tlm::tlm_generic_payload& gp, PacketSource& source) {
    egress_[out]->enqueue(in, gp, source);
  }
  unsigned route(tlm::tlm_generic_payload& gp) const;

 private:
  const Router* router_ = nullptr;
  std::vector<std::unique_ptr<IngressPort>> ingress_;
  std::vector<std::unique_ptr<EgressPort>> egress_;
};

}  // namespace tessera::models
