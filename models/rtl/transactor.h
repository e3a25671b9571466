// Transactors: an RTL block at an egress port (models/link/fabric_port.h), between the port's
// transactions and the block's pins. The port hands its decision to the transactor (it is the
// port's PortController); the transactor drives the block's inputs from the port's state,
// clocks it, samples its outputs at the rising edge, checks them against the block's contract
// and grants the port what the block decided.
//
// The clock. A port's clock runs at the rate its link moves flits: its period is one flit's
// time on the link (flit bytes / link bandwidth, rounded up to the picosecond). It is gated:
// it runs only while the block has something to decide (for an arbiter: the wire is free and
// some input has a chunk waiting), so an idle port costs no evaluation at all. It is a pausible
// clock: when the port needs a decision the gate opens and the first rising edge comes at once
// (at least one period after the previous edge), so a block that decides in the cycle its
// inputs arrive decides at the same picosecond as the port's C++ arbiter would have.
//
// One rising edge, all at one simulated time:
//   delta 0  the port's state is taken (when the port asks: the moment its own arbiter would
//            decide)
//   delta 1  the transactor drives the inputs from it
//   delta 2  the verilated model evaluates (its combinational outputs settle)
//   delta 3  the transactor samples the outputs, checks them, acts on them (a grant starts a
//            chunk) and raises clk; the model evaluates its flops in delta 4
// Only the transactor's own process writes the pins.
// and clk falls: half a period later when the run writes a waveform (--vcd), else in the next
// delta cycle (a zero-width pulse: a block's flops see the rising edge either way, and the run
// then schedules no timed event of its own, so that the kernel orders the platform's
// simultaneous events as it does without RTL; docs/cosim.md). The first edge, at time 0, is a
// reset cycle (rst_n low), so a block with synchronous reset is reset too.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "models/link/fabric_port.h"

namespace tessera::rtl {

class Transactor : public sc_core::sc_module, public models::PortController {
 public:
  // The port's link sets the clock: `flit_bytes` per period at its bandwidth.
  static sc_core::sc_time clock_period(const models::EgressPort& port, uint32_t flit_bytes);

  void port_changed() override;

  models::EgressPort& port() { return port_; }
  const models::EgressPort& port() const { return port_; }
  const std::string& block_name() const { return block_name_; }
  virtual const char* block_kind() const = 0;  // "arbiter", "rate limiter"
  sc_core::sc_time period() const { return period_; }
  // Rising edges evaluated, the reset cycle included.
  uint64_t cycles() const { return cycles_; }
  // Decisions acted on (grants, allowed chunks).
  uint64_t decisions() const { return decisions_; }
  // Adds the block's pins and the port's signals to a VCD file (during elaboration); the
  // clock's high phase then lasts half a period.
  void trace_signals(sc_core::sc_trace_file* file) {
    high_ = half_;
    trace_pins(file);
  }

 protected:
  Transactor(sc_core::sc_module_name name, models::EgressPort& port, std::string block_name,
             sc_core::sc_time period);

  // The clock should run: the block has something to decide.
  virtual bool enabled() const = 0;
  // Takes the port's state for the coming edge (delta 0), then drives the block's inputs from
  // it (delta 1).
  virtual void snapshot() = 0;
  virtual void drive() = 0;
  // The rising edge: samples and checks the outputs and acts on them (delta 2). Returns the
  // cycles until the next edge may come (at least 1: a rate limiter may let the clock stop for
  // longer).
  virtual uint64_t edge() = 0;
  // Half a period after a rising edge, with clk falling: inputs that follow what the edge did
  // (never in the rising edge's own delta, where the flops would see them).
  virtual void falling() {}
  virtual void set_clk(bool level) = 0;
  virtual void set_rst_n(bool level) = 0;
  virtual void trace_pins(sc_core::sc_trace_file* file) = 0;
  // The cycle number of an edge (1 for the first edge after reset).
  uint64_t cycle() const { return cycles_; }
  void decided() { ++decisions_; }
  // Runs refreshed() from the transactor's process in the next delta when the clock is gated
  // (waveforms of the port's side while the block sleeps).
  void refresh();
  virtual void refreshed() {}
  // The port's cycle count at the current time (time / period), as a free-running counter would
  // show it.
  uint64_t wall_cycle() const { return sc_core::sc_time_stamp().value() / period_.value(); }

 private:
  enum class Phase { Reset, ResetLow, Gated, Rise, Drive, Settle, Sample, High };
  void step();
  void open_gate();

  models::EgressPort& port_;
  std::string block_name_;
  sc_core::sc_time period_, half_;
  sc_core::sc_time high_;      // how long clk stays high: half_ when traced, else 0 (a delta)
  sc_core::sc_time earliest_;  // the next rising edge may not come before
  sc_core::sc_event wake_;
  Phase phase_ = Phase::Reset;
  uint64_t cycles_ = 0;
  uint64_t decisions_ = 0;
};

}  // namespace tessera::rtl
