// An egress port arbitrated by an RTL arbiter block (docs/cosim.md, "The arbiter").
//
// Pins: clk, rst_n, req[PORTS] (bit i: input i has a chunk for this port), credit_ok (the
// buffer at the link's far end has a free slot) in; gnt[PORTS] out. At a rising edge the
// transactor samples gnt and checks, naming the block, the cycle and the rule:
//   one grant per cycle                        gnt is zero or one-hot
//   a grant goes to a requesting input         gnt & ~req == 0
//   no grant without a downstream credit       gnt == 0 while credit_ok == 0
//   a request with a credit is granted         within kGrantWithinCycles cycles
// then starts the granted input's first chunk on the wire.
//
// The clock runs while the wire is free and a chunk waits. With no credit the block gets one
// edge (to show that it does not grant), then the clock stops until a slot frees.
#pragma once

#include <memory>

#include "models/rtl/block.h"
#include "models/rtl/transactor.h"

namespace tessera::rtl {

class ArbiterPort final : public Transactor {
 public:
  static constexpr uint64_t kGrantWithinCycles = 1024;

  // `port` must be bound to its link's far end (EgressPort::set_downstream) and have at most
  // block.ports (and 64) inputs. Construct while its owner is being elaborated.
  ArbiterPort(sc_core::sc_module_name name, models::EgressPort& port, const BlockInfo& block,
              sc_core::sc_time period);

  const char* block_kind() const override { return "arbiter"; }
  void port_changed() override;

 private:
  bool enabled() const override;
  void snapshot() override;
  void drive() override;
  uint64_t edge() override;
  void falling() override;
  void refreshed() override { show_port(); }
  void trace_pins(sc_core::sc_trace_file* file) override;
  void set_clk(bool level) override { block_->set_clk(level); }
  void set_rst_n(bool level) override { block_->set_rst_n(level); }
  [[noreturn]] void broken(const char* rule, const std::string& detail) const;
  void show_port();

  std::unique_ptr<ArbiterBlock> block_;
  uint64_t req_ = 0;        // driven at this edge
  bool credit_ok_ = false;  // driven at this edge
  bool starved_edge_ = false;  // an edge without credit was given since credits ran out
  uint64_t waiting_ = 0;    // edges a request with a credit has gone without a grant
  // The port's side, for waveforms only (written once traced).
  bool traced_ = false;
  sc_core::sc_signal<uint32_t> credits_, queued_, granted_;
  sc_core::sc_signal<bool> wire_busy_;
};

}  // namespace tessera::rtl
