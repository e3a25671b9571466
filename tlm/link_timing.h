// Link timing arithmetic: how long a chunk occupies a link, in closed form (never per byte).
#pragma once

#include <cmath>
#include <cstdint>

#include <systemc>

namespace tessera::protocol {

struct LinkTiming {
  double bandwidth_bytes_per_s = 0.0;   // per direction
  sc_core::sc_time latency = sc_core::SC_ZERO_TIME;  // propagation + fixed hop latency
  uint32_t packet_overhead_bytes = 0;   // header/CRC bytes per packet on the wire
  uint32_t max_packet_payload_bytes = 0;  // 0: a chunk is one packet

  // Packets a chunk of `bytes` is split into on this link.
  uint64_t packets(uint64_t bytes) const {
    if (max_packet_payload_bytes == 0 || bytes == 0) return 1;
    return (bytes + max_packet_payload_bytes - 1) / max_packet_payload_bytes;
  }
  // Bytes on the wire for a chunk of `bytes` of payload.
  double wire_bytes(uint64_t bytes) const {
    return double(bytes) + double(packets(bytes)) * double(packet_overhead_bytes);
  }
  // Time the sender's port is busy putting the chunk on the link (rounded up to 1 ps).
  // `protocol_factor` scales the wire bytes for a protocol that sends flags with the data
  // (NCCL LL: 2, LL128: 128/120).
  sc_core::sc_time serialization(uint64_t bytes, double protocol_factor = 1.0) const {
    return sc_core::sc_time::from_value(serialization_ps(bytes, protocol_factor));
  }
  // The same, in picoseconds (a flow fabric adds up millions).
  sc_dt::uint64 serialization_ps(uint64_t bytes, double protocol_factor = 1.0) const {
    return static_cast<sc_dt::uint64>(std::ceil(wire_bytes(bytes) * protocol_factor * 1e12 / bandwidth_bytes_per_s));
  }
  // Whether a chunk costs the same on both links (the links of a network tier).
  bool same_cost(const LinkTiming& o) const {
    return bandwidth_bytes_per_s == o.bandwidth_bytes_per_s && packet_overhead_bytes == o.packet_overhead_bytes &&
           max_packet_payload_bytes == o.max_packet_payload_bytes;
  }
  // Whether a chunk of any size keeps this link busy no longer than it keeps `o` (a bound: here
  // at most bytes x (1 + overhead / max payload) + overhead on the wire, there at least bytes +
  // its overhead). Of two links that carry the same flows, such a link never fills first.
  bool never_busier_than(const LinkTiming& o) const {
    const double per_byte =
        max_packet_payload_bytes == 0 ? 1.0 : 1.0 + double(packet_overhead_bytes) / max_packet_payload_bytes;
    return per_byte * o.bandwidth_bytes_per_s <= bandwidth_bytes_per_s &&
           double(packet_overhead_bytes) * o.bandwidth_bytes_per_s <=
               double(o.packet_overhead_bytes) * bandwidth_bytes_per_s;
  }
  // Payload bandwidth achieved by back-to-back chunks of `bytes`.
  double effective_bandwidth(uint64_t bytes) const {
    return bandwidth_bytes_per_s * double(bytes) / wire_bytes(bytes);
  }
};

}  // namespace tessera::protocol
