#include "models/rtl/arbiter_port.h"

#include <stdexcept>

#include "models/rtl/contract.h"

namespace tessera::rtl {

ArbiterPort::ArbiterPort(sc_core::sc_module_name name, models::EgressPort& port, const BlockInfo& block,
                         sc_core::sc_time period)
    : Transactor(name, port, block.name, period),
      credits_("port_credits"),
      queued_("port_queued"),
      granted_("port_granted_input"),
      wire_busy_("port_wire_busy") {
  if (block.kind != BlockKind::Arbiter || !block.make_arbiter)
    throw std::logic_error("RTL block " + block.name + " is not an arbiter");
  if (port.inputs() > block.ports || port.inputs() > 64)
    throw std::invalid_argument(std::string(port.name()) + " has " + std::to_string(port.inputs()) +
                                " inputs, more than arbiter " + block.name + " serves (PORTS = " +
                                std::to_string(block.ports) + (block.ports >= 64 ? "" : "; verilate one with more") +
                                ")");
  if (port.downstream() == nullptr)
    throw std::logic_error(std::string(port.name()) + ": an RTL arbiter needs the link's far end for credits");
  block_ = block.make_arbiter("block");
  port.set_controller(this);
  port.downstream()->set_credit_listener(this);
}

void ArbiterPort::port_changed() {
  Transactor::port_changed();
  if (traced_) refresh();
}

bool ArbiterPort::enabled() const {
  const models::EgressPort& p = port();
  return p.wire_free() && p.queued() > 0 && (p.credits() > 0 || !starved_edge_);
}

void ArbiterPort::snapshot() {
  req_ = port().requests();
  credit_ok_ = port().credits() > 0;
  starved_edge_ = !credit_ok_;
}

void ArbiterPort::drive() {
  block_->set_req(req_);
  block_->set_credit_ok(credit_ok_);
  if (traced_) show_port();
}

uint64_t ArbiterPort::edge() {
  const uint64_t g = block_->gnt();
  if (g == 0) {
    if (req_ != 0 && credit_ok_ && ++waiting_ > kGrantWithinCycles)
      broken("a request with a credit is granted",
             "req = " + describe_mask(req_) + " and credit_ok = 1 for " + std::to_string(waiting_) +
                 " cycles without a grant (at most " + std::to_string(kGrantWithinCycles) + ")");
    return 1;
  }
  if ((g & (g - 1)) != 0)
    broken("one grant per cycle", "gnt = " + describe_mask(g) + ", req = " + describe_mask(req_));
  if ((g & ~req_) != 0)
    broken("a grant goes to a requesting input", "gnt = " + describe_mask(g) + ", req = " + describe_mask(req_));
  if (!credit_ok_)
    broken("no grant without a downstream credit",
           "gnt = " + describe_mask(g) + " while credit_ok = 0 (the buffer at the link's far end is full)");
  waiting_ = 0;
  const unsigned input = static_cast<unsigned>(__builtin_ctzll(g));
  decided();
  port().grant(input);
  if (traced_) {
    granted_.write(input);
    show_port();
  }
  return 1;
}

// The pins follow the grant (the waveform shows the request gone); the next edge drives them again.
void ArbiterPort::falling() {
  block_->set_req(port().requests());
  block_->set_credit_ok(port().credits() > 0);
  if (traced_) show_port();
}

void ArbiterPort::broken(const char* rule, const std::string& detail) const {
  contract_broken(block_name(), port().name(), "arbiter", cycle(), rule, detail);
}

void ArbiterPort::show_port() {
  credits_.write(port().credits());
  queued_.write(static_cast<uint32_t>(port().queued()));
  wire_busy_.write(!port().wire_free());
}

void ArbiterPort::trace_pins(sc_core::sc_trace_file* file) {
  const std::string prefix = name();
  block_->trace(file, prefix);
  traced_ = true;
  sc_core::sc_trace(file, credits_, prefix + ".port_credits");
  sc_core::sc_trace(file, queued_, prefix + ".port_queued");
  sc_core::sc_trace(file, granted_, prefix + ".port_granted_input");
  sc_core::sc_trace(file, wire_busy_, prefix + ".port_wire_busy");
}

}  // namespace tessera::rtl
