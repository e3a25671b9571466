// Network switch (InfiniBand or Ethernet): radix ports at a per-port bandwidth, a pipeline
// latency, finite ingress buffers whose backpressure is credit flow control (the sender's port
// stalls until the buffer has room: lossless, like IB credits or Ethernet PFC), routing tables
// with ECMP hashing.
#pragma once

#include "models/switch/crossbar.h"

namespace tessera::models {

class NetworkSwitch : public Crossbar {
 public:
  NetworkSwitch(sc_core::sc_module_name name, const CrossbarConfig& config)
      : Crossbar(name, config) {}
};

}  // namespace tessera::models
