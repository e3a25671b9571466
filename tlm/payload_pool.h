// A pooled memory manager for generic payloads. Payloads are created on demand, carry one of each
// tessera extension for their whole life, and return to the free list when their reference
// count drops to zero (tlm_mm_interface::free). In steady state nothing is allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <tlm>

#include "tlm/extensions.h"

namespace tessera::protocol {

class PayloadPool : public tlm::tlm_mm_interface {
 public:
  PayloadPool() = default;
  PayloadPool(const PayloadPool&) = delete;
  PayloadPool& operator=(const PayloadPool&) = delete;
  ~PayloadPool() override;

  // A payload with reference count 1 (the caller's), write command, no data pointer.
  tlm::tlm_generic_payload* acquire();
  void free(tlm::tlm_generic_payload* payload) override;

  uint64_t created() const { return all_.size(); }
  uint64_t in_use() const { return all_.size() - free_.size(); }

 private:
  std::vector<std::unique_ptr<Payload>> all_;
  std::vector<tlm::tlm_generic_payload*> free_;
};

}  // namespace tessera::protocol
