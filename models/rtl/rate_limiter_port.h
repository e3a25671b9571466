// An egress port whose chunks leave when an RTL rate limiter allows them (docs/cosim.md, "The
// rate limiter"): a NIC's network port shaped to a configured rate.
//
// The port's round-robin still picks which input goes next; the block decides when. Pins:
// clk, rst_n, cycle[64] (the port's cycle count, time / period, running on while the clock is
// gated), rate[32] (flits per cycle in 16.16 fixed point; 1.0 is the link's line rate),
// burst[32] (the bucket, flits), req, req_flits[32] (the waiting chunk's size on the wire,
// flits) in; allow, wait_cycles[32] out. At a rising edge the transactor samples allow and checks:
//   allow only with a request
//   never above the rate                 the chunk's flits fit in a reference token bucket of
//                                        `rate` and `burst` kept by the transactor
//   a chunk the bucket holds leaves      within kAllowWithinCycles cycles of having its tokens
// then sends the chunk. Without allow, the clock stops for wait_cycles cycles (at least one): a
// block that says how long it needs costs one edge per chunk, not one per cycle of waiting.
#pragma once

#include <memory>

#include "models/rtl/block.h"
#include "models/rtl/transactor.h"

namespace tessera::rtl {

struct RateLimit {
  uint32_t rate_q16 = 0;    // flits per cycle, 16.16 fixed point
  uint32_t burst_flits = 0;
  uint32_t flit_bytes = 64;
};

class RateLimiterPort final : public Transactor {
 public:
  static constexpr uint64_t kAllowWithinCycles = 1024;

  RateLimiterPort(sc_core::sc_module_name name, models::EgressPort& port, const BlockInfo& block,
                  sc_core::sc_time period, const RateLimit& limit);

  const char* block_kind() const override { return "rate limiter"; }
  // The rate limit as the block gets it: `bytes_per_s` of the port's line rate.
  static RateLimit limit_for(const models::EgressPort& port, double bytes_per_s, uint64_t burst_bytes,
                             uint32_t flit_bytes);

 private:
  bool enabled() const override;
  void snapshot() override;
  void drive() override;
  uint64_t edge() override;
  void falling() override { block_->set_req(holding_); }
  void trace_pins(sc_core::sc_trace_file* file) override;
  void set_clk(bool level) override { block_->set_clk(level); }
  void set_rst_n(bool level) override;
  [[noreturn]] void broken(const char* rule, const std::string& detail) const;
  // The reference bucket's tokens (16.16 flits) at port cycle `now`.
  uint64_t tokens_at(uint64_t now) const;

  std::unique_ptr<RateLimiterBlock> block_;
  RateLimit limit_;
  bool holding_ = false;  // a chunk is presented (held until allowed)
  unsigned input_ = 0;    // its input
  uint32_t flits_ = 0;    // its size
  uint64_t cycle_ = 0;    // the cycle pin at this edge
  // The reference bucket: tokens at cycle last_.
  uint64_t tokens_ = 0, last_ = 0;
};

}  // namespace tessera::rtl
