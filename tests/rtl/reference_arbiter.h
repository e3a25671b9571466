// rr_arbiter.sv written as a SystemC pin-level module: the same pins, the same round-robin, its
// grant combinational and its pointer moved at the rising edge, evaluated by one method
// process on every input change as Verilator's model is. Through the same transactor it is a
// control for the verilated block: any difference between the two is the Verilog's; any
// difference between either and the port's own C++ arbiter is the transactor's timing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <systemc>
#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn

#include "models/rtl/registry.h"

namespace tessera::testing {

class ReferenceArbiter : public rtl::ArbiterBlock {
 public:
  explicit ReferenceArbiter(unsigned ports)
      : ports_(ports), clk_("clk"), rst_n_("rst_n"), req_("req"), credit_ok_("credit_ok"), gnt_("gnt") {
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.set_sensitivity(&clk_.value_changed_event());
    o.set_sensitivity(&rst_n_.value_changed_event());
    o.set_sensitivity(&req_.value_changed_event());
    o.set_sensitivity(&credit_ok_.value_changed_event());
    sc_core::sc_spawn([this] { eval(); }, "eval", &o);
  }
  void set_clk(bool level) override { clk_.write(level); }
  void set_rst_n(bool level) override { rst_n_.write(level); }
  void set_req(uint64_t req) override { req_.write(req); }
  void set_credit_ok(bool ok) override { credit_ok_.write(ok); }
  uint64_t gnt() const override { return gnt_.read(); }
  void trace(sc_core::sc_trace_file*, const std::string&) const override {}

 private:
  // The input granted with the pointer at `ptr`, or ports_ for none.
  unsigned choice(unsigned ptr) const {
    if (!credit_ok_.read()) return ports_;
    for (unsigned k = 0; k < ports_; ++k) {
      const unsigned i = (ptr + k) % ports_;
      if (req_.read() >> i & 1) return i;
    }
    return ports_;
  }
  void eval() {
    const bool rise = clk_.read() && !last_clk_;
    last_clk_ = clk_.read();
    if (!rst_n_.read()) {
      ptr_ = 0;
    } else if (rise) {
      const unsigned g = choice(ptr_);
      if (g < ports_) ptr_ = (g + 1) % ports_;
    }
    const unsigned g = choice(ptr_);
    gnt_.write(g < ports_ ? uint64_t(1) << g : 0);
  }

  unsigned ports_;
  unsigned ptr_ = 0;
  bool last_clk_ = false;
  sc_core::sc_signal<bool> clk_, rst_n_;
  sc_core::sc_signal<uint64_t> req_;
  sc_core::sc_signal<bool> credit_ok_;
  sc_core::sc_signal<uint64_t> gnt_;
};

// Registers it as the arbiter block "reference_rr_arbiter" (64 ports), once per process.
inline void register_reference_arbiter() {
  for (const rtl::BlockInfo& b : rtl::blocks())
    if (b.name == "reference_rr_arbiter") return;
  rtl::BlockInfo b;
  b.name = "reference_rr_arbiter";
  b.kind = rtl::BlockKind::Arbiter;
  b.top = "ReferenceArbiter";
  b.ports = 64;
  b.description = "rr_arbiter.sv as a SystemC pin-level module (tests)";
  b.make_arbiter = [](const char*) -> std::unique_ptr<rtl::ArbiterBlock> {
    return std::make_unique<ReferenceArbiter>(64);
  };
  rtl::add_block(std::move(b));
}

}  // namespace tessera::testing
