#include "models/rtl/rate_limiter_port.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/rtl/contract.h"
#include "tlm/extensions.h"

namespace tessera::rtl {

RateLimiterPort::RateLimiterPort(sc_core::sc_module_name name, models::EgressPort& port, const BlockInfo& block,
                                 sc_core::sc_time period, const RateLimit& limit)
    : Transactor(name, port, block.name, period), limit_(limit) {
  if (block.kind != BlockKind::RateLimiter || !block.make_rate_limiter)
    throw std::logic_error("RTL block " + block.name + " is not a rate limiter");
  if (limit.rate_q16 == 0) throw std::invalid_argument(std::string(port.name()) + ": a rate limit of zero");
  block_ = block.make_rate_limiter("block");
  tokens_ = uint64_t(limit.burst_flits) << 16;  // the bucket starts full
  port.set_controller(this);
}

RateLimit RateLimiterPort::limit_for(const models::EgressPort& port, double bytes_per_s, uint64_t burst_bytes,
                                     uint32_t flit_bytes) {
  RateLimit l;
  l.flit_bytes = flit_bytes;
  const double line = port.link()->timing().bandwidth_bytes_per_s;
  l.rate_q16 = static_cast<uint32_t>(std::min(4294967295.0, std::max(1.0, std::floor(bytes_per_s / line * 65536.0))));
  l.burst_flits = static_cast<uint32_t>(std::min<uint64_t>(0xffffffffu, burst_bytes / flit_bytes));
  return l;
}

bool RateLimiterPort::enabled() const { return port().wire_free() && port().queued() > 0; }

uint64_t RateLimiterPort::tokens_at(uint64_t now) const {
  const uint64_t cap = uint64_t(limit_.burst_flits) << 16;
  const uint64_t elapsed = now - last_;
  if (elapsed >= (uint64_t(1) << 32)) return cap;
  const uint64_t gained = elapsed * limit_.rate_q16;
  return gained >= cap || tokens_ + gained >= cap ? cap : tokens_ + gained;
}

void RateLimiterPort::snapshot() {
  if (!holding_) {
    // The port's round-robin picks the chunk; it is presented until it is allowed.
    input_ = port().round_robin_choice();
    const protocol::FabricTransfer& t = protocol::fabric_transfer(port().head(input_));
    const double wire = port().link()->timing().wire_bytes(t.bytes) * t.wire_factor;
    flits_ = static_cast<uint32_t>(std::min(4294967295.0, std::ceil(wire / limit_.flit_bytes)));
    if (flits_ > limit_.burst_flits)
      throw std::invalid_argument(std::string(port().name()) + ": a chunk of " + std::to_string(flits_) +
                                  " flits does not fit the rate limiter's bucket of " +
                                  std::to_string(limit_.burst_flits) + " flits: it could never leave");
    holding_ = true;
  }
  cycle_ = wall_cycle();
}

void RateLimiterPort::drive() {
  block_->set_cycle(cycle_);
  block_->set_req(true);
  block_->set_req_flits(flits_);
}

uint64_t RateLimiterPort::edge() {
  const uint64_t need = uint64_t(flits_) << 16;
  const uint64_t have = tokens_at(cycle_);
  if (!block_->allow()) {
    if (have >= need) {
      // The reference bucket held the chunk's tokens from this cycle on.
      const uint64_t ready = tokens_ >= need ? last_ : last_ + (need - tokens_ + limit_.rate_q16 - 1) / limit_.rate_q16;
      if (cycle_ > ready + kAllowWithinCycles)
        broken("a chunk the bucket holds leaves",
               "a chunk of " + std::to_string(flits_) + " flits has had its tokens since cycle " + std::to_string(ready) +
                   " and is still held at cycle " + std::to_string(cycle_) + " (at most " +
                   std::to_string(kAllowWithinCycles) + " cycles)");
    }
    return std::max<uint32_t>(1, block_->wait_cycles());
  }
  if (!holding_) broken("allow only with a request", "allow = 1 while req = 0");
  if (have < need)
    broken("never above the rate", "allowed a chunk of " + std::to_string(flits_) + " flits with " +
                                        std::to_string(have >> 16) + " flits of tokens in the reference bucket (rate " +
                                        std::to_string(limit_.rate_q16 / 65536.0) + " flits/cycle, burst " +
                                        std::to_string(limit_.burst_flits) + " flits)");
  tokens_ = have - need;
  last_ = cycle_;
  holding_ = false;
  decided();
  port().grant(input_);
  return 1;
}

void RateLimiterPort::set_rst_n(bool level) {
  if (!level) {  // the reset cycle: the configuration is on the pins from the start
    block_->set_rate(limit_.rate_q16);
    block_->set_burst(limit_.burst_flits);
    block_->set_cycle(wall_cycle());
  }
  block_->set_rst_n(level);
}

void RateLimiterPort::broken(const char* rule, const std::string& detail) const {
  contract_broken(block_name(), port().name(), "rate limiter", cycle(), rule, detail);
}

void RateLimiterPort::trace_pins(sc_core::sc_trace_file* file) { block_->trace(file, name()); }

}  // namespace tessera::rtl
