// Fabric ports: the approximately-timed handshake every link endpoint speaks.
//
// Per hop, one chunk is one AT transaction:
//   BEGIN_REQ  egress -> ingress, delay = serialization + hop and link latency (the chunk's
//              arrival).
//   END_REQ    ingress -> egress when the ingress buffer has a free slot for the chunk: in the
//              return path (TLM_UPDATED) when space is free at once, later on the backward path
//              when space frees. Until END_REQ the egress port may not start the next chunk
//              (the request exclusion rule), so a full buffer stalls the sender: backpressure.
//   BEGIN_RESP ingress -> egress when the whole chunk has arrived (from the ingress PEQ); the
//              egress answers TLM_COMPLETED, which ends the hop transaction.
// The same payload then starts its next hop from the node that received it.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "models/link/link.h"
#include "models/link/ring_queue.h"
#include "tlm/sockets.h"

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

// Receiving side of a link: a buffer of `capacity` chunks.
class IngressPort : public sc_core::sc_module, public PacketSource {
 public:
  protocol::TargetSocket<IngressPort> socket;

  IngressPort(sc_core::sc_module_name name, PacketSink& owner, unsigned index, unsigned capacity);

  // The owner forwarded or consumed a chunk: its slot is free again.
  void packet_left(tlm::tlm_generic_payload& gp) override;

  unsigned occupied() const { return occupied_; }
  unsigned capacity() const { return capacity_; }
  bool stalling() const { return pending_ != nullptr; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void arrival(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);

  PacketSink& owner_;
  unsigned index_;
  unsigned capacity_;
  unsigned occupied_ = 0;
  tlm::tlm_generic_payload* pending_ = nullptr;  // a request waiting for a free slot
  sc_core::sc_time pending_delay_;
  protocol::PayloadEventQueue<IngressPort> peq_;
};

// Sending side of a link: one queue per input, round-robin arbitration among the inputs with a
// chunk waiting, one chunk on the wire at a time for its serialization time.
class EgressPort : public sc_core::sc_module {
 public:
  protocol::InitiatorSocket<EgressPort> socket;

  EgressPort(sc_core::sc_module_name name, unsigned inputs);

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

  // Queues a chunk from `input`; `source` learns when it leaves.
  void enqueue(unsigned input, tlm::tlm_generic_payload& gp, PacketSource& source);

  size_t queued() const { return queued_; }
  unsigned inputs() const { return static_cast<unsigned>(queues_.size()); }

 private:
  struct Waiting {
    tlm::tlm_generic_payload* gp = nullptr;
    PacketSource* source = nullptr;
  };
  enum class State { Idle, AwaitingAccept, Serializing };

  void try_send();
  void accepted();
  void serialization_done();
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);

  Link* link_ = nullptr;
  sc_core::sc_time hop_latency_;
  sc_core::sc_time chunk_overhead_;
  std::vector<RingQueue<Waiting>> queues_;
  size_t queued_ = 0;
  unsigned next_input_ = 0;
  State state_ = State::Idle;
  Waiting current_;
  sc_core::sc_time current_serialization_;
  sc_core::sc_event wire_free_;
};

}  // namespace tessera::models
