// Fabric ports: the approximately-timed handshake every link endpoint speaks.
//
// Per hop, one chunk is one AT transaction:
//   BEGIN_REQ  egress -> ingress, delay = serialization + hop and link latency (the chunk's
//              arrival).
//   END_REQ    ingress -> egress when the ingress buffer has a free slot for the chunk: in the
//              return path (TLM_UPDATED) when space is free at once, later on the backward path
//              when space frees. Until END_REQ the egress port may not start the next chunk
//              (the request exclusion rule), so a full buffer stalls the sender: backpressure.
//   BEGIN_RESP ingress -> egress when the whole chunk has arrived (from the ingress's arrival
//              queue); the egress answers TLM_COMPLETED, which ends the hop transaction.
// The same payload then starts its next hop from the node that received it.
//
// A large platform has hundreds of thousands of ports (a 16,384-GPU cluster: 190,000 links, an
// egress and an ingress each), so a port is not a module of its own: its plain TLM socket,
// its event and its method process are children of the device that owns it (the port's name
// is the socket's), and it implements the transport interface itself. The convenience
// sockets of tlm_utils and peq_with_cb_and_phase cost several SystemC objects and kilobytes
// per instance; a link delivers its chunks in the order it sent them, so the ingress's
// payload event queue is a FIFO.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>

#include "models/link/link.h"
#include "models/link/ring_queue.h"

namespace tessera::models {

// Whatever put a chunk into an egress queue learns when the chunk has left it (the next hop
// accepted it), so it can free the buffer slot the chunk held.
class PacketSource {
 public:
  virtual ~PacketSource() = default;
  virtual void packet_left(tlm::tlm_generic_payload& gp) = 0;
};

// The node that owns an ingress port receives every chunk that arrives there.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  virtual void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) = 0;
};

// Arbitration done outside an egress port (an RTL block behind its transactor, models/rtl and
// docs/cosim.md). The port no longer picks an input itself: it calls port_changed() at each
// moment its own round-robin arbiter would decide (a chunk queued while the wire is free, the
// wire freed) and when the link's far end frees a buffer slot (a credit returns), and sends
// what the controller grants (EgressPort::grant).
class PortController {
 public:
  virtual ~PortController() = default;
  virtual void port_changed() = 0;
};

class EgressPort;

// Sees every chunk an egress port starts to send and which input it came from (tests compare
// grant orders through it).
class GrantObserver {
 public:
  virtual ~GrantObserver() = default;
  virtual void granted(const EgressPort& port, unsigned input, const tlm::tlm_generic_payload& gp) = 0;
};

// Receiving side of a link: a buffer of `capacity` chunks. Construct it while its owner
// module is being elaborated (its socket, event and process become the owner's children).
class IngressPort : public PacketSource, private tlm::tlm_fw_transport_if<> {
 public:
  tlm::tlm_target_socket<> socket;

  IngressPort(const char* name, PacketSink& owner, unsigned index, unsigned capacity);

  // The owner forwarded or consumed a chunk: its slot is free again.
  void packet_left(tlm::tlm_generic_payload& gp) override;

  unsigned occupied() const { return occupied_; }
  unsigned capacity() const { return capacity_; }
  bool stalling() const { return pending_ != nullptr; }
  // Free slots: the credits the sender at the link's other end holds.
  unsigned credits() const { return pending_ != nullptr ? 0 : capacity_ - occupied_; }
  // Told whenever a slot frees (a credit returns to the sender); null: nobody.
  void set_credit_listener(PortController* listener) { credit_listener_ = listener; }

 private:
  struct Arrival {
    tlm::tlm_generic_payload* gp = nullptr;
    sc_core::sc_time at;
  };

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp) override;

  // The chunk arrives whole `delay` from now (never before the chunks already on the wire).
  void schedule(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  void deliver();

  PacketSink& owner_;
  unsigned index_;
  unsigned capacity_;
  unsigned occupied_ = 0;
  tlm::tlm_generic_payload* pending_ = nullptr;  // a request waiting for a free slot
  sc_core::sc_time pending_delay_;
  PortController* credit_listener_ = nullptr;
  RingQueue<Arrival> arrivals_;  // chunks on the wire, in order of arrival
  sc_core::sc_event arrival_;    // the first of them has arrived
};

// Sending side of a link: one queue per input, round-robin arbitration among the inputs with a
// chunk waiting, one chunk on the wire at a time for its serialization time. Construct it while
// its owner module is being elaborated.
class EgressPort : private tlm::tlm_bw_transport_if<> {
 public:
  tlm::tlm_initiator_socket<> socket;

  EgressPort(const char* name, unsigned inputs);

  // The wire this port drives (its socket is bound to the far end's ingress socket):
  // serialization and latency use its timing, and it counts what it carries.
  void attach(Link& link) { link_ = &link; }
  // Pipeline latency of the node in front of this port (a switch's crossbar), added to every
  // chunk's arrival time; it does not occupy the port.
  void set_hop_latency(sc_core::sc_time latency) { hop_latency_ = latency; }
  // Fixed work per chunk that occupies the port besides serialization (a NIC's per-message
  // processing).
  void set_chunk_overhead(sc_core::sc_time overhead) { chunk_overhead_ = overhead; }
  const Link* link() const { return link_; }
  // The ingress port at the link's far end (the builder binds the socket to it): its free
  // slots are this port's credits.
  void set_downstream(IngressPort& far_end) { downstream_ = &far_end; }
  IngressPort* downstream() const { return downstream_; }

  // Queues a chunk from `input`; `source` learns when it leaves.
  void enqueue(unsigned input, tlm::tlm_generic_payload& gp, PacketSource& source);

  size_t queued() const { return queued_; }
  unsigned inputs() const { return static_cast<unsigned>(queues_.size()); }
  const char* name() const { return socket.name(); }

  // The far end's last free slot kept for some inputs (call after set_downstream, while
  // elaborating): a chunk from an input with `may_take_last[input]` set goes when the far end
  // has one free slot, a chunk from any other input when it has two. A route that cannot
  // deadlock on its own keeps the last slot for the chunks that break a cycle of buffers:
  // bubble flow control on a torus ring, where the chunks that go on along the ring take it and
  // those that enter the ring never fill it (Carrion et al., "A flow control mechanism to avoid
  // message deadlock in k-ary n-cube networks", HiPC 1997); on a dragonfly's local links the
  // chunks that came over a global link, as a second virtual channel would (Kim et al.,
  // "Technology-driven, highly-scalable dragonfly topology", ISCA 2008). The round-robin passes
  // over inputs that may not go yet. An external controller (set_controller) arbitrates
  // without it.
  void reserve_last_slot(std::vector<bool> may_take_last);
  // Arbitration by a controller instead of the port's round-robin (null: the port's own).
  void set_controller(PortController* controller) { controller_ = controller; }
  void set_observer(GrantObserver* observer) { observer_ = observer; }
  // What a controller decides on: is the wire free for the next chunk, which inputs have one
  // waiting (bit i: input i, the first 64 inputs), how many free slots the far end has.
  bool wire_free() const { return state_ == State::Idle; }
  bool requesting(unsigned input) const { return !queues_[input].empty(); }
  uint64_t requests() const;
  unsigned credits() const { return downstream_ != nullptr ? downstream_->credits() : ~0u; }
  // The input the port's own round-robin would pick next (queued() > 0), and its first chunk.
  unsigned round_robin_choice() const;
  tlm::tlm_generic_payload& head(unsigned input) { return *queues_[input].front().gp; }
  // The controller's decision: the first chunk of `input` goes on the wire now. The wire must
  // be free and the input must have a chunk (std::logic_error otherwise).
  void grant(unsigned input);

 private:
  struct Waiting {
    tlm::tlm_generic_payload* gp = nullptr;
    PacketSource* source = nullptr;
  };
  enum class State { Idle, AwaitingAccept, Serializing };

  void try_send();
  // Round-robin among inputs whose chunk the reserved slot lets go now; inputs() if none.
  unsigned reserved_choice() const;
  void start(unsigned input);
  void accepted();
  void serialization_done();
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) override;

  Link* link_ = nullptr;
  IngressPort* downstream_ = nullptr;
  PortController* controller_ = nullptr;
  GrantObserver* observer_ = nullptr;
  sc_core::sc_time hop_latency_;
  sc_core::sc_time chunk_overhead_;
  std::vector<RingQueue<Waiting>> queues_;
  std::vector<bool> may_take_last_;  // reserve_last_slot: empty where it does not apply
  struct CreditWatch : PortController {
    sc_core::sc_event returned;
    void port_changed() override { returned.notify(sc_core::SC_ZERO_TIME); }
  };
  std::unique_ptr<CreditWatch> credit_watch_;  // wakes a port waiting for room at the far end
  size_t queued_ = 0;
  unsigned next_input_ = 0;
  State state_ = State::Idle;
  Waiting current_;
  sc_core::sc_time current_serialization_;
  sc_core::sc_event wire_free_;
};

}  // namespace tessera::models
