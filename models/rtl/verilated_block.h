// A verilated SystemC model (the class Verilator --sc generates, V) with a signal bound to each
// of its pins, seen through the block interfaces of block.h. Included by the registration code
// models/rtl/CMakeLists.txt generates, once per block; nothing else needs Verilator's headers.
//
// A pin missing from the Verilog module, or of another direction, fails to compile here, in
// the generated rtl_blocks.cpp, naming the pin (docs/cosim.md lists the pins).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <systemc>

#include "models/rtl/block.h"

namespace tessera::rtl {

// The C++ type Verilator gave a pin: bool (1 bit), uint32_t (up to 32), uint64_t (up to 64).
template <typename Pin>
using pin_type = typename std::remove_reference_t<Pin>::data_type;

template <typename T>
class PinSignal : public sc_core::sc_signal<T> {
 public:
  explicit PinSignal(const char* name) : sc_core::sc_signal<T>(name) {}
  void set(uint64_t v) { this->write(static_cast<T>(v)); }
  uint64_t get() const { return static_cast<uint64_t>(this->read()); }
};

template <class V>
class VerilatedArbiter final : public ArbiterBlock {
 public:
  explicit VerilatedArbiter(const char* name)
      : model_(name), clk_("clk"), rst_n_("rst_n"), req_("req"), credit_ok_("credit_ok"), gnt_("gnt") {
    model_.clk(clk_);
    model_.rst_n(rst_n_);
    model_.req(req_);
    model_.credit_ok(credit_ok_);
    model_.gnt(gnt_);
  }
  void set_clk(bool level) override { clk_.set(level); }
  void set_rst_n(bool level) override { rst_n_.set(level); }
  void set_req(uint64_t req) override { req_.set(req); }
  void set_credit_ok(bool ok) override { credit_ok_.set(ok); }
  uint64_t gnt() const override { return gnt_.get(); }
  void trace(sc_core::sc_trace_file* f, const std::string& prefix) const override {
    sc_core::sc_trace(f, clk_, prefix + ".clk");
    sc_core::sc_trace(f, rst_n_, prefix + ".rst_n");
    sc_core::sc_trace(f, req_, prefix + ".req");
    sc_core::sc_trace(f, credit_ok_, prefix + ".credit_ok");
    sc_core::sc_trace(f, gnt_, prefix + ".gnt");
  }

 private:
  V model_;
  PinSignal<pin_type<decltype(std::declval<V&>().clk)>> clk_;
  PinSignal<pin_type<decltype(std::declval<V&>().rst_n)>> rst_n_;
  PinSignal<pin_type<decltype(std::declval<V&>().req)>> req_;
  PinSignal<pin_type<decltype(std::declval<V&>().credit_ok)>> credit_ok_;
  PinSignal<pin_type<decltype(std::declval<V&>().gnt)>> gnt_;
};

template <class V>
class VerilatedRateLimiter final : public RateLimiterBlock {
 public:
  explicit VerilatedRateLimiter(const char* name)
      : model_(name), clk_("clk"), rst_n_("rst_n"), cycle_("cycle"), rate_("rate"), burst_("burst"),
        req_("req"), req_flits_("req_flits"), allow_("allow"), wait_cycles_("wait_cycles") {
    model_.clk(clk_);
    model_.rst_n(rst_n_);
    model_.cycle(cycle_);
    model_.rate(rate_);
    model_.burst(burst_);
    model_.req(req_);
    model_.req_flits(req_flits_);
    model_.allow(allow_);
    model_.wait_cycles(wait_cycles_);
  }
  void set_clk(bool level) override { clk_.set(level); }
  void set_rst_n(bool level) override { rst_n_.set(level); }
  void set_cycle(uint64_t cycle) override { cycle_.set(cycle); }
  void set_rate(uint32_t rate) override { rate_.set(rate); }
  void set_burst(uint32_t burst) override { burst_.set(burst); }
  void set_req(bool req) override { req_.set(req); }
  void set_req_flits(uint32_t flits) override { req_flits_.set(flits); }
  bool allow() const override { return allow_.get() != 0; }
  uint32_t wait_cycles() const override { return static_cast<uint32_t>(wait_cycles_.get()); }
  void trace(sc_core::sc_trace_file* f, const std::string& prefix) const override {
    sc_core::sc_trace(f, clk_, prefix + ".clk");
    sc_core::sc_trace(f, rst_n_, prefix + ".rst_n");
    sc_core::sc_trace(f, cycle_, prefix + ".cycle");
    sc_core::sc_trace(f, rate_, prefix + ".rate");
    sc_core::sc_trace(f, burst_, prefix + ".burst");
    sc_core::sc_trace(f, req_, prefix + ".req");
    sc_core::sc_trace(f, req_flits_, prefix + ".req_flits");
    sc_core::sc_trace(f, allow_, prefix + ".allow");
    sc_core::sc_trace(f, wait_cycles_, prefix + ".wait_cycles");
  }

 private:
  V model_;
  PinSignal<pin_type<decltype(std::declval<V&>().clk)>> clk_;
  PinSignal<pin_type<decltype(std::declval<V&>().rst_n)>> rst_n_;
  PinSignal<pin_type<decltype(std::declval<V&>().cycle)>> cycle_;
  PinSignal<pin_type<decltype(std::declval<V&>().rate)>> rate_;
  PinSignal<pin_type<decltype(std::declval<V&>().burst)>> burst_;
  PinSignal<pin_type<decltype(std::declval<V&>().req)>> req_;
  PinSignal<pin_type<decltype(std::declval<V&>().req_flits)>> req_flits_;
  PinSignal<pin_type<decltype(std::declval<V&>().allow)>> allow_;
  PinSignal<pin_type<decltype(std::declval<V&>().wait_cycles)>> wait_cycles_;
};

// The registration of one block (the generated code calls this once per tessera_rtl_block).
template <class V>
BlockInfo arbiter_block(std::string name, std::string top, std::string source, std::string source_text,
                        unsigned ports, std::string description) {
  BlockInfo b;
  b.name = std::move(name);
  b.kind = BlockKind::Arbiter;
  b.top = std::move(top);
  b.source = std::move(source);
  b.source_text = std::move(source_text);
  b.ports = ports;
  b.description = std::move(description);
  b.make_arbiter = [](const char* n) -> std::unique_ptr<ArbiterBlock> {
    return std::make_unique<VerilatedArbiter<V>>(n);
  };
  return b;
}

template <class V>
BlockInfo rate_limiter_block(std::string name, std::string top, std::string source, std::string source_text,
                             std::string description) {
  BlockInfo b;
  b.name = std::move(name);
  b.kind = BlockKind::RateLimiter;
  b.top = std::move(top);
  b.source = std::move(source);
  b.source_text = std::move(source_text);
  b.description = std::move(description);
  b.make_rate_limiter = [](const char* n) -> std::unique_ptr<RateLimiterBlock> {
    return std::make_unique<VerilatedRateLimiter<V>>(n);
  };
  return b;
}

}  // namespace tessera::rtl
