#include "platforms/every_key_hops.h"

#include <algorithm>

namespace tessera::platforms {

void transpose_bits(uint64_t rows[64]) {
  // Swaps the off-diagonal blocks of 32, then of 16 inside each, and so on: row k's columns
  // with bit j set trade places with row k + j's columns with bit j clear.
  uint64_t low = 0x00000000FFFFFFFFull;
  for (int j = 32; j != 0; j >>= 1, low ^= low << j)
    for (int k = 0; k < 64; ++k) {
      if (k & j) continue;
      const uint64_t t = ((rows[k] >> j) ^ rows[k + j]) & low;
      rows[k] ^= t << j;
      rows[k + j] ^= t;
    }
}

namespace {

// The keys within cost d of each switch, d = 0, 1, ... until nothing changes (empty: more
// levels than `budget` words hold).
using Levels = std::vector<std::vector<uint64_t>>;

bool search_every_key(const std::vector<uint32_t>& begin, const std::vector<uint32_t>& peer,
                      const std::vector<uint8_t>& cost, uint32_t gateways, uint32_t words, uint32_t costliest,
                      size_t budget, Levels& within) {
  const uint32_t switches = static_cast<uint32_t>(begin.size() - 1) - gateways;
  for (uint32_t d = 1, unchanged = 0; unchanged < costliest; ++d) {
    if ((within.size() + 1) * within[0].size() > budget) return false;
    within.push_back(within.back());
    std::vector<uint64_t>& now = within.back();
    for (uint32_t s = 0; s < switches; ++s) {
      uint64_t* to = &now[size_t(s) * words];
      const uint32_t x = gateways + s;
      for (uint32_t i = begin[x]; i < begin[x + 1]; ++i) {
        if (peer[i] < gateways || cost[i] > d) continue;
        const uint64_t* from = &within[d - cost[i]][size_t(peer[i] - gateways) * words];
        for (uint32_t w = 0; w < words; ++w) to[w] |= from[w];
      }
    }
    // (A key first within d comes through a hop of at most `costliest` from one first within
    // less: after that many levels without change, none comes.)
    unchanged = now == within[d - 1] ? unchanged + 1 : 0;
  }
  return true;
}

// Switch s's hops as keys per port (`hops`, `words` a port): the ports into a switch nearer
// each key by the port's cost.
void hops_of_switch(const std::vector<uint32_t>& begin, const std::vector<uint32_t>& peer,
                    const std::vector<uint8_t>& cost, uint32_t gateways, uint32_t words, const Levels& within,
                    uint32_t s, std::vector<uint64_t>& exact, std::vector<uint64_t>& hops) {
  const uint32_t levels = static_cast<uint32_t>(within.size()), x = gateways + s;
  const uint32_t ports = begin[x + 1] - begin[x];
  std::vector<bool> used(levels);  // (levels are few)
  for (uint32_t d = 0; d < levels; ++d) {  // the keys at exactly cost d
    uint64_t any = 0;
    for (uint32_t w = 0; w < words; ++w) {
      const size_t at = size_t(s) * words + w;
      exact[size_t(d) * words + w] = within[d][at] & (d > 0 ? ~within[d - 1][at] : ~uint64_t(0));
      any |= exact[size_t(d) * words + w];
    }
    used[d] = any != 0;
  }
  std::fill(hops.begin(), hops.begin() + size_t(ports) * words, 0);
  for (uint32_t p = 0; p < ports; ++p) {
    const uint32_t i = begin[x] + p, c = cost[i];
    if (peer[i] < gateways) continue;
    const size_t far = size_t(peer[i] - gateways) * words;
    uint64_t* h = &hops[size_t(p) * words];
    for (uint32_t d = std::max<uint32_t>(c, 1); d < levels; ++d) {  // (d 0: its own keys, no hops)
      if (!used[d]) continue;
      // (A key at exactly d here is nowhere nearer than d - c there: within d - c is exactly.)
      const uint64_t* there = &within[d - c][far];
      for (uint32_t w = 0; w < words; ++w) h[w] |= exact[size_t(d) * words + w] & there[w];
    }
  }
}

}  // namespace

EveryKeyHops every_key_hops(const std::vector<uint32_t>& begin, const std::vector<uint32_t>& peer,
                            const std::vector<uint8_t>& cost, uint32_t gateways,
                            const std::vector<std::vector<uint32_t>>& key_switches) {
  const uint32_t devices = static_cast<uint32_t>(begin.size() - 1);
  const uint32_t keys = static_cast<uint32_t>(key_switches.size());
  if (devices <= gateways || keys == 0) return {};
  const uint32_t switches = devices - gateways, words = (keys + 63) / 64;
  uint32_t costliest = 1;
  for (uint32_t x = gateways; x < devices; ++x) {
    if (begin[x + 1] - begin[x] > 64) return {};
    for (uint32_t i = begin[x]; i < begin[x + 1]; ++i)
      if (peer[i] >= gateways) costliest = std::max<uint32_t>(costliest, cost[i]);
  }
  Levels within(1, std::vector<uint64_t>(size_t(switches) * words, 0));
  for (uint32_t k = 0; k < keys; ++k)
    for (uint32_t x : key_switches[k]) {
      if (x < gateways || x >= devices) return {};
      within[0][size_t(x - gateways) * words + k / 64] |= uint64_t(1) << (k % 64);
    }
  const size_t budget = size_t(32) << 20;  // words of levels (256 MB)
  if (!search_every_key(begin, peer, cost, gateways, words, costliest, budget, within)) return {};

  EveryKeyHops out;
  out.switches = switches;
  out.index.assign(size_t(keys) * switches, EveryKeyHops::kNone);
  out.sets.resize(switches);
  std::vector<uint64_t> exact(within.size() * words), hops(size_t(64) * words);
  std::vector<uint16_t> slot(512);  // a switch's sets by hash: index + 1 (0: free)
  uint64_t rows[64];
  for (uint32_t s = 0; s < switches; ++s) {
    hops_of_switch(begin, peer, cost, gateways, words, within, s, exact, hops);
    const uint32_t ports = begin[gateways + s + 1] - begin[gateways + s];
    std::vector<uint64_t>& sets = out.sets[s];
    std::fill(slot.begin(), slot.end(), 0);
    for (uint32_t b = 0; b < words; ++b) {
      for (uint32_t p = 0; p < 64; ++p) rows[p] = p < ports ? hops[size_t(p) * words + b] : 0;
      transpose_bits(rows);  // row j: the ports toward key 64 b + j
      for (uint32_t j = 0; j < 64 && b * 64 + j < keys; ++j) {
        if (rows[j] == 0) continue;  // none: its own key, or one it cannot reach
        size_t h = (rows[j] * 0x9E3779B97F4A7C15ull) >> 55;
        while (slot[h] != 0 && sets[slot[h] - 1] != rows[j]) h = (h + 1) & 511;
        if (slot[h] == 0) {
          if (sets.size() == EveryKeyHops::kNone) return {};
          sets.push_back(rows[j]);
          slot[h] = static_cast<uint16_t>(sets.size());
        }
        out.index[size_t(b * 64 + j) * switches + s] = static_cast<uint8_t>(slot[h] - 1);
      }
    }
  }
  return out;
}

}  // namespace tessera::platforms
