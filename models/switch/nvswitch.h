// NVSwitch: the crossbar of an NVLink fabric (inside a node, or a second tier across nodes).
#pragma once

#include "models/switch/crossbar.h"

namespace tessera::models {

class NvSwitch : public Crossbar {
 public:
  NvSwitch(sc_core::sc_module_name name, const CrossbarConfig& config) : Crossbar(name, config) {}
};

}  // namespace tessera::models
