// The host's root complex: the PCIe switch at the top of a node's PCIe tree, with the host's
// memory attached. Traffic that crosses it from one PCIe port to another is, with
// `peer_through_memory`, staged in host memory: written into a pinned buffer and read back
// out (NCCL's shared-memory transport, what a GPU pair uses where peer-to-peer through the CPU
// is off; GPUDirect RDMA through the CPU likewise), so it is limited by the memory bandwidth
// as well as by the PCIe links. Without it the root complex forwards peer to peer like a
// PCIe switch.
#pragma once

#include <memory>

#include "models/memory/host_memory.h"
#include "models/switch/crossbar.h"

namespace tessera::models {

struct RootComplexConfig {
  CrossbarConfig crossbar;
  HostMemoryConfig memory;
  bool peer_through_memory = true;
};

class RootComplex : public Crossbar, private HostMemoryClient {
 public:
  RootComplex(sc_core::sc_module_name name, const RootComplexConfig& config);

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;

  const HostMemory& memory() const { return *memory_; }

 private:
  void memory_done(tlm::tlm_generic_payload& gp, uint32_t tag) override;

  bool peer_through_memory_;
  std::unique_ptr<HostMemory> memory_;
};

}  // namespace tessera::models
