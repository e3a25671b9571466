// Host memory: the DRAM behind the CPU's memory controllers, attached to the root complex.
//
// One bandwidth serves reads and writes alike (a DDR channel turns around between them), so
// the memory is one server: chunks queue for it in arrival order and each access of a chunk
// occupies it for wire bytes / bandwidth. A chunk staged through host memory (a GPU's write
// into a pinned buffer, then the peer's read from it) makes two accesses, so staged traffic
// flows at no more than half the memory's bandwidth, less what else uses it. Nothing is
// allocated per chunk: the queue is a ring that grows to its high-water mark.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>

#include "models/link/ring_queue.h"
#include "tlm/link_timing.h"

namespace tessera::models {

struct HostMemoryConfig {
  double capacity_bytes = 0;
  double bandwidth_bytes_per_s = 300e9;  // reads and writes together
};

// Whoever staged a chunk in host memory learns when its accesses are done.
class HostMemoryClient {
 public:
  virtual ~HostMemoryClient() = default;
  // `tag` is what the client gave with the chunk.
  virtual void memory_done(tlm::tlm_generic_payload& gp, uint32_t tag) = 0;
};

class HostMemory : public sc_core::sc_module {
 public:
  HostMemory(sc_core::sc_module_name name, const HostMemoryConfig& config);

  // Queues `accesses` accesses of the chunk's wire bytes (2: written, then read back).
  void stage(tlm::tlm_generic_payload& gp, unsigned accesses, HostMemoryClient& client, uint32_t tag);

  const HostMemoryConfig& config() const { return config_; }
  uint64_t bytes_accessed() const { return bytes_; }  // reads plus writes
  uint64_t chunks_staged() const { return chunks_; }
  sc_core::sc_time busy_time() const { return busy_; }
  size_t queued() const { return queue_.size(); }

 private:
  struct Request {
    tlm::tlm_generic_payload* gp = nullptr;
    HostMemoryClient* client = nullptr;
    uint32_t tag = 0;
    unsigned accesses = 0;
  };
  void start();
  void finished();

  HostMemoryConfig config_;
  protocol::LinkTiming timing_;  // the memory as a wire: its bandwidth, no packets
  RingQueue<Request> queue_;     // the request in service is at the front
  bool serving_ = false;
  sc_core::sc_event done_;
  uint64_t bytes_ = 0;
  uint64_t chunks_ = 0;
  sc_core::sc_time busy_;
};

}  // namespace tessera::models
