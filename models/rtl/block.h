// RTL blocks: Verilog modules verilated into SystemC modules (Verilator --sc), seen by their
// transactors through the pins of a block kind (docs/cosim.md has the contracts):
//
//   arbiter       a switch output port's arbiter: req[PORTS], credit_ok -> gnt[PORTS]
//   rate_limiter  a NIC network port's rate limiter: req, req_flits, cycle, rate, burst ->
//                 allow, wait_cycles
//
// The blocks built into this binary are in a registry (registry.h), filled at start-up by the
// code models/rtl/CMakeLists.txt generates for every tessera_rtl_block() of the build.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <systemc>

namespace tessera::rtl {

enum class BlockKind { Arbiter, RateLimiter };
const char* block_kind_name(BlockKind kind);

// A verilated arbiter and the signals bound to its pins. Values are the pins' bits, whatever
// C++ type Verilator gave each pin (bool, uint32_t or uint64_t).
class ArbiterBlock {
 public:
  virtual ~ArbiterBlock() = default;
  virtual void set_clk(bool level) = 0;
  virtual void set_rst_n(bool level) = 0;
  virtual void set_req(uint64_t req) = 0;
  virtual void set_credit_ok(bool ok) = 0;
  virtual uint64_t gnt() const = 0;
  // Adds every pin to a VCD file, named PREFIX.PIN.
  virtual void trace(sc_core::sc_trace_file* file, const std::string& prefix) const = 0;
};

class RateLimiterBlock {
 public:
  virtual ~RateLimiterBlock() = default;
  virtual void set_clk(bool level) = 0;
  virtual void set_rst_n(bool level) = 0;
  virtual void set_cycle(uint64_t cycle) = 0;
  virtual void set_rate(uint32_t rate) = 0;
  virtual void set_burst(uint32_t burst) = 0;
  virtual void set_req(bool req) = 0;
  virtual void set_req_flits(uint32_t flits) = 0;
  virtual bool allow() const = 0;
  virtual uint32_t wait_cycles() const = 0;
  virtual void trace(sc_core::sc_trace_file* file, const std::string& prefix) const = 0;
};

// One block of the build: what tessera_rtl_block() was given and how to make an instance.
struct BlockInfo {
  std::string name;         // what a platform file names: rtl:NAME
  BlockKind kind = BlockKind::Arbiter;
  std::string top;          // the Verilog module
  std::string source;       // the file it was verilated from (absolute): rtl:PATH
  std::string source_text;  // that file's text when it was verilated
  unsigned ports = 0;       // arbiter: request and grant bits (the PORTS parameter)
  std::string description;
  // Makes an instance as a child of the module being elaborated.
  std::function<std::unique_ptr<ArbiterBlock>(const char* name)> make_arbiter;
  std::function<std::unique_ptr<RateLimiterBlock>(const char* name)> make_rate_limiter;
};

}  // namespace tessera::rtl
