// NIC: PCIe on one side, the network on the other. A chunk from a GPU arrives over PCIe
// (GPUDirect RDMA: GPU -> PCIe switch -> NIC) and leaves on the network port segmented into
// MTU packets (the network link's timing adds each packet's headers), after the per-message
// work-request processing, which occupies the send engine; chunks from the network go to the
// GPU over PCIe.
#pragma once

#include "models/switch/crossbar.h"

namespace tessera::models {

struct NicConfig {
  CrossbarConfig crossbar;                      // ports: PCIe ports first, then network ports
  unsigned network_port = 1;                    // first network port
  sc_core::sc_time message_overhead;            // per chunk sent to the network
};

class Nic : public Crossbar {
 public:
  Nic(sc_core::sc_module_name name, const NicConfig& config);
};

}  // namespace tessera::models
