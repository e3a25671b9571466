// Every routing key's hops of least cost at every switch of a network, found for all keys at
// once (Routing::prepare_every_column). A key's column alone is one search from its switches
// over every port of the network, so the columns of all keys cost keys x ports: 2,048 keys by
// 327,680 ports on 65,536 H100, the one part of building a run that grew with the square of
// its GPUs. Here the searches run side by side, a bit per key: the keys within cost d of a
// switch are the union of those within d - c of its neighbours (c: the hop's cost), a few
// dozen words per port and level; a switch's hops toward a key are then the ports whose far
// switch is nearer by the hop's cost, which a 64 x 64 bit transpose turns from keys per port
// into ports per key.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::platforms {

struct EveryKeyHops {
  static constexpr uint8_t kNone = 0xff;  // no hops: the key's own switch, or one it cannot reach
  uint32_t switches = 0;
  // [key * switches + s]: switch s's hops toward the key, an index into sets[s] (or kNone).
  std::vector<uint8_t> index;
  // Per switch: its distinct sets of hops, as sets of its ports (all below 64).
  std::vector<std::vector<uint64_t>> sets;
  bool empty() const { return index.empty(); }
};

// Transposes a 64 x 64 bit matrix in place: bit j of row i becomes bit i of row j.
void transpose_bits(uint64_t rows[64]);

// The hops of every key over a network given as flat ports (`begin`, per device its first port;
// `peer`, `cost` per port); devices from `gateways` on are switches, and paths pass through
// switches only. `key_switches`: per key, the switches its gateways hang off (its sources). The
// hops of a switch are the ports into switches nearer the key by the port's cost, as
// Routing::column finds them key by key. Empty (the caller searches key by key) where a switch
// has more than 64 ports or more than 255 distinct sets of hops, a key hangs off a device that
// is not a switch, or the levels of cost would pass 256 MB.
EveryKeyHops every_key_hops(const std::vector<uint32_t>& begin, const std::vector<uint32_t>& peer,
                            const std::vector<uint8_t>& cost, uint32_t gateways,
                            const std::vector<std::vector<uint32_t>>& key_switches);

}  // namespace tessera::platforms
