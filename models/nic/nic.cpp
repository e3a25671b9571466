#include "models/nic/nic.h"

namespace tessera::models {

Nic::Nic(sc_core::sc_module_name name, const NicConfig& config) : Crossbar(name, config.crossbar) {
  for (unsigned p = config.network_port; p < ports(); ++p)
    egress(p).set_chunk_overhead(config.message_overhead);
}

}  // namespace tessera::models
