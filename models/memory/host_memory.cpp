#include "models/memory/host_memory.h"

#include <stdexcept>
#include <string>

#include "tlm/extensions.h"
#include "tlm/sockets.h"

namespace tessera::models {

HostMemory::HostMemory(sc_core::sc_module_name name, const HostMemoryConfig& config)
    : sc_module(name), config_(config), done_("done") {
  if (!(config_.bandwidth_bytes_per_s > 0))
    throw std::invalid_argument(std::string(this->name()) + ": host memory bandwidth must be positive");
  timing_.bandwidth_bytes_per_s = config_.bandwidth_bytes_per_s;
  protocol::spawn_method("controller", &done_, [this] { finished(); });
}

void HostMemory::stage(tlm::tlm_generic_payload& gp, unsigned accesses, HostMemoryClient& client,
                       uint32_t tag) {
  queue_.push(Request{&gp, &client, tag, accesses});
  if (!serving_) start();
}

void HostMemory::start() {
  serving_ = true;
  const Request& r = queue_.front();
  const protocol::FabricTransfer& t = protocol::fabric_transfer(*r.gp);
  const sc_core::sc_time occupied = timing_.serialization(t.bytes * r.accesses, t.wire_factor);
  busy_ += occupied;
  bytes_ += t.bytes * r.accesses;
  done_.notify(occupied);
}

void HostMemory::finished() {
  const Request r = queue_.pop();
  ++chunks_;
  serving_ = false;
  if (!queue_.empty()) start();  // the memory goes on while the client forwards the chunk
  r.client->memory_done(*r.gp, r.tag);
}

}  // namespace tessera::models
