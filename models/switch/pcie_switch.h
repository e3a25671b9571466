// PCIe switch: connects GPUs and NICs below it to each other (peer-to-peer) and, through its
// uplink, to the host's root complex. The root complex is a PCIe switch of its own kind: GPU
// traffic between PCIe switches crosses it.
#pragma once

#include "models/switch/crossbar.h"

namespace tessera::models {

class PcieSwitch : public Crossbar {
 public:
  PcieSwitch(sc_core::sc_module_name name, const CrossbarConfig& config) : Crossbar(name, config) {}
};

}  // namespace tessera::models
