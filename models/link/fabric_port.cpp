#include "models/link/fabric_port.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tlm/extensions.h"
#include "tlm/sockets.h"

namespace tessera::models {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {

std::string suffixed(const char* name, const char* suffix) { return std::string(name) + suffix; }

}  // namespace

IngressPort::IngressPort(const char* name, PacketSink& owner, unsigned index, unsigned capacity)
    : socket(name),
      owner_(owner),
      index_(index),
      capacity_(capacity == 0 ? 1 : capacity),
      arrival_(suffixed(name, "_arrival").c_str()) {
  socket.bind(*this);
  protocol::spawn_method(suffixed(name, "_deliver").c_str(), &arrival_, [this] { deliver(); });
}

tlm::tlm_sync_enum IngressPort::nb_transport_fw(tlm::tlm_generic_payload& gp,
                                                tlm::tlm_phase& phase, sc_time& delay) {
  if (phase == tlm::BEGIN_REQ) {
    if (occupied_ < capacity_) {
      ++occupied_;
      schedule(gp, delay);
      phase = tlm::END_REQ;
      delay = SC_ZERO_TIME;
      return tlm::TLM_UPDATED;
    }
    // Buffer full: hold END_REQ back; the sender's port stalls until a slot frees.
    pending_ = &gp;
    pending_delay_ = delay;
    return tlm::TLM_ACCEPTED;
  }
  // END_RESP is never sent: the egress completes the hop on BEGIN_RESP.
  return tlm::TLM_COMPLETED;
}

void IngressPort::schedule(tlm::tlm_generic_payload& gp, const sc_time& delay) {
  const sc_time at = sc_core::sc_time_stamp() + delay;
  if (!arrivals_.empty() && at < arrivals_.back().at)
    throw std::logic_error("a link delivered a chunk before the one sent ahead of it");
  arrivals_.push(Arrival{&gp, at});
  // Notified at every arrival, as peq_with_cb_and_phase does (an earlier pending notification
  // stands): the kernel then orders simultaneous events as it did with that queue.
  arrival_.notify(delay);
}

void IngressPort::deliver() {
  const sc_time now = sc_core::sc_time_stamp();
  while (!arrivals_.empty() && arrivals_.front().at <= now) {
    tlm::tlm_generic_payload& gp = *arrivals_.pop().gp;
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_time delay = SC_ZERO_TIME;
    socket->nb_transport_bw(gp, phase, delay);  // the sender answers TLM_COMPLETED
    owner_.packet_arrived(index_, gp);
  }
  if (!arrivals_.empty()) arrival_.notify(arrivals_.front().at - now);
}

void IngressPort::packet_left(tlm::tlm_generic_payload&) {
  --occupied_;
  if (credit_listener_ != nullptr && pending_ == nullptr) credit_listener_->port_changed();
  if (pending_ != nullptr) {
    // The stalled sender may go on: its chunk starts serializing now.
    tlm::tlm_generic_payload* gp = pending_;
    pending_ = nullptr;
    ++occupied_;
    schedule(*gp, pending_delay_);
    tlm::tlm_phase phase = tlm::END_REQ;
    sc_time delay = SC_ZERO_TIME;
    socket->nb_transport_bw(*gp, phase, delay);
  }
}

// Fabric chunks travel only as AT transactions.
void IngressPort::b_transport(tlm::tlm_generic_payload& gp, sc_time&) {
  gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
}
bool IngressPort::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) { return false; }
unsigned int IngressPort::transport_dbg(tlm::tlm_generic_payload&) { return 0; }

EgressPort::EgressPort(const char* name, unsigned inputs)
    : socket(name), queues_(inputs == 0 ? 1 : inputs), wire_free_(suffixed(name, "_wire_free").c_str()) {
  socket.bind(*this);
  protocol::spawn_method(suffixed(name, "_arbiter").c_str(), &wire_free_, [this] { serialization_done(); });
}

void EgressPort::enqueue(unsigned input, tlm::tlm_generic_payload& gp, PacketSource& source) {
  queues_[input].push(Waiting{&gp, &source});
  ++queued_;
  if (controller_ != nullptr) return controller_->port_changed();
  if (state_ == State::Idle) try_send();
}

uint64_t EgressPort::requests() const {
  uint64_t mask = 0;
  const size_t n = std::min<size_t>(queues_.size(), 64);
  for (size_t i = 0; i < n; ++i)
    if (!queues_[i].empty()) mask |= uint64_t(1) << i;
  return mask;
}

unsigned EgressPort::round_robin_choice() const {
  // The first input at or after next_input_ that has a chunk waiting.
  const unsigned n = static_cast<unsigned>(queues_.size());
  unsigned input = next_input_;
  while (queues_[input].empty()) input = (input + 1) == n ? 0 : input + 1;
  return input;
}

void EgressPort::reserve_last_slot(std::vector<bool> may_take_last) {
  if (downstream_ == nullptr || downstream_->capacity() < 2)
    throw std::logic_error(std::string(name()) + ": a reserved slot needs a far end of two chunks or more");
  may_take_last.resize(queues_.size(), false);
  may_take_last_ = std::move(may_take_last);
  credit_watch_ = std::make_unique<CreditWatch>();
  downstream_->set_credit_listener(credit_watch_.get());
  protocol::spawn_method(suffixed(name(), "_credits").c_str(), &credit_watch_->returned, [this] {
    if (state_ == State::Idle) try_send();
  });
}

unsigned EgressPort::reserved_choice() const {
  const unsigned n = static_cast<unsigned>(queues_.size());
  const unsigned free = credits();
  unsigned input = next_input_;
  for (unsigned k = 0; k < n; ++k, input = (input + 1) == n ? 0 : input + 1)
    if (!queues_[input].empty() && free >= (may_take_last_[input] ? 1u : 2u)) return input;
  return n;
}

void EgressPort::try_send() {
  if (controller_ != nullptr) return controller_->port_changed();
  if (queued_ == 0) return;
  if (may_take_last_.empty()) return start(round_robin_choice());
  const unsigned input = reserved_choice();
  if (input < queues_.size()) start(input);  // else a returning credit wakes the port
}

void EgressPort::grant(unsigned input) {
  if (state_ != State::Idle || input >= queues_.size() || queues_[input].empty())
    throw std::logic_error(std::string(name()) + ": granted input " + std::to_string(input) +
                           (state_ != State::Idle ? " while the wire is busy" : " that has no chunk"));
  start(input);
}

void EgressPort::start(unsigned input) {
  const unsigned n = static_cast<unsigned>(queues_.size());
  next_input_ = (input + 1) == n ? 0 : input + 1;
  current_ = queues_[input].pop();
  --queued_;
  if (observer_ != nullptr) observer_->granted(*this, input, *current_.gp);

  const protocol::FabricTransfer& t = protocol::fabric_transfer(*current_.gp);
  current_serialization_ = link_->timing().serialization(t.bytes, t.wire_factor) + chunk_overhead_;
  state_ = State::AwaitingAccept;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_time delay = current_serialization_ + hop_latency_ + link_->timing().latency;
  tlm::tlm_sync_enum status = socket->nb_transport_fw(*current_.gp, phase, delay);
  if (status == tlm::TLM_UPDATED && phase == tlm::END_REQ) accepted();
}

void EgressPort::accepted() {
  state_ = State::Serializing;
  wire_free_.notify(current_serialization_);
  Waiting done = current_;
  current_ = Waiting{};
  done.source->packet_left(*done.gp);
}

void EgressPort::serialization_done() {
  state_ = State::Idle;
  try_send();
}

tlm::tlm_sync_enum EgressPort::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                               sc_time&) {
  if (phase == tlm::END_REQ) {
    accepted();
    return tlm::TLM_ACCEPTED;
  }
  // BEGIN_RESP: the chunk arrived whole at the far end; the hop transaction is over.
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  link_->carried(t.bytes, t.wire_factor);
  return tlm::TLM_COMPLETED;
}

void EgressPort::invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) {}

}  // namespace tessera::models
