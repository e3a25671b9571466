#include "models/rtl/transactor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tlm/sockets.h"

namespace tessera::rtl {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

sc_time Transactor::clock_period(const models::EgressPort& port, uint32_t flit_bytes) {
  if (port.link() == nullptr) throw std::logic_error(std::string(port.name()) + ": no link to clock by");
  const double ps = std::ceil(double(flit_bytes) * 1e12 / port.link()->timing().bandwidth_bytes_per_s);
  // At least 2 ps, so that the clock has a high and a low phase at the 1 ps resolution.
  return sc_time::from_value(static_cast<sc_dt::uint64>(std::max(2.0, ps)));
}

Transactor::Transactor(sc_core::sc_module_name name, models::EgressPort& port, std::string block_name,
                       sc_time period)
    : sc_module(name),
      port_(port),
      block_name_(std::move(block_name)),
      period_(period),
      half_(sc_time::from_value(period.value() / 2)),
      wake_("wake") {
  // Runs once at time 0 (the reset cycle), then whenever step() asks.
  protocol::spawn_method("clock", nullptr, [this] { step(); });
}

void Transactor::port_changed() {
  if (phase_ == Phase::Gated && enabled()) open_gate();
}

void Transactor::refresh() {
  if (phase_ == Phase::Gated) wake_.notify(SC_ZERO_TIME);
}

// The gate opens: the next rising edge comes now, or one period after the previous one.
void Transactor::open_gate() {
  const sc_time now = sc_core::sc_time_stamp();
  if (now >= earliest_) {
    snapshot();
    phase_ = Phase::Drive;
    wake_.notify(SC_ZERO_TIME);
  } else {
    phase_ = Phase::Rise;
    wake_.notify(earliest_ - now);
  }
}

void Transactor::step() {
  switch (phase_) {
    case Phase::Reset:  // time 0: one edge with rst_n low
      set_rst_n(false);
      set_clk(true);
      ++cycles_;
      earliest_ = period_;
      phase_ = Phase::ResetLow;
      sc_core::next_trigger(high_);
      return;
    case Phase::ResetLow:
      set_clk(false);
      set_rst_n(true);
      phase_ = Phase::Gated;
      if (enabled()) open_gate();
      sc_core::next_trigger(wake_);
      return;
    case Phase::Gated:  // refresh()
      refreshed();
      sc_core::next_trigger(wake_);
      return;
    case Phase::Rise:
      if (!enabled()) {
        phase_ = Phase::Gated;
        sc_core::next_trigger(wake_);
        return;
      }
      if (sc_core::sc_time_stamp() < earliest_) {  // woken early (a refresh was pending)
        wake_.notify(earliest_ - sc_core::sc_time_stamp());
        sc_core::next_trigger(wake_);
        return;
      }
      snapshot();
      drive();
      phase_ = Phase::Settle;
      sc_core::next_trigger(SC_ZERO_TIME);
      return;
    case Phase::Drive:
      drive();
      phase_ = Phase::Settle;
      sc_core::next_trigger(SC_ZERO_TIME);
      return;
    case Phase::Settle:  // the model evaluates in this delta
      phase_ = Phase::Sample;
      sc_core::next_trigger(SC_ZERO_TIME);
      return;
    case Phase::Sample: {
      ++cycles_;
      const uint64_t gap = std::max<uint64_t>(1, edge());
      const sc_dt::uint64 now = sc_core::sc_time_stamp().value(), left = ~sc_dt::uint64(0) - now;
      earliest_ = sc_time::from_value(gap > left / period_.value() ? ~sc_dt::uint64(0) : now + gap * period_.value());
      set_clk(true);
      phase_ = Phase::High;
      sc_core::next_trigger(high_);
      return;
    }
    case Phase::High:
      set_clk(false);
      falling();
      phase_ = Phase::Gated;
      if (enabled()) open_gate();
      sc_core::next_trigger(wake_);
      return;
  }
}

}  // namespace tessera::rtl
