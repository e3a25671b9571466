#include "platforms/spread_lineages.h"

#include <algorithm>
#include <cstring>

namespace tessera::platforms {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace

void SpreadLineages::take(std::vector<SpreadParticle>& wave) {
  order_.clear();
  for (uint32_t i = 0; i < wave.size(); ++i)
    if (wave[i].share > 0.0) order_.push_back(i);
  if (order_.size() < kFewestParticles) return;
  std::sort(order_.begin(), order_.end(), [&wave](uint32_t a, uint32_t b) {
    return wave[a].group != wave[b].group ? wave[a].group < wave[b].group : wave[a].device < wave[b].device;
  });
  for (size_t begin = 0, end = 0; begin < order_.size(); begin = end) {
    const uint32_t group = wave[order_[begin]].group;
    while (end < order_.size() && wave[order_[end]].group == group) ++end;
    if (end - begin < kFewestParticles) continue;
    wave_.clear();
    uint64_t hash = group;
    for (size_t i = begin; i < end; ++i) {
      const SpreadParticle& p = wave[order_[i]];
      wave_.emplace_back(p.device, p.share);
      hash = mix(mix(hash, p.device), bits_of(p.share));
    }
    bool seen = false;
    const uint32_t id = find_or_file(group, hash, seen);
    if (!seen) continue;
    handed_.push_back(id);
    for (size_t i = begin; i < end; ++i) wave[order_[i]].share = 0.0;
  }
}

uint32_t SpreadLineages::find_or_file(uint32_t group, uint64_t hash, bool& seen) {
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Lineage& l = all_[it->second];
    if (l.group == group && l.wave == wave_) {
      seen = true;
      return it->second;
    }
  }
  Lineage l;
  l.group = group;
  l.wave = wave_;
  all_.push_back(std::move(l));
  const uint32_t id = static_cast<uint32_t>(all_.size() - 1);
  by_hash_.emplace(hash, id);
  seen = false;
  return id;
}

bool SpreadLineages::apart(uint32_t a, uint32_t b) {
  if (a == b) return false;
  const auto key = std::minmax(a, b);
  const auto [it, added] = apart_.emplace(std::make_pair(key.first, key.second), true);
  if (added) {
    const std::vector<uint64_t>&x = all_[a].links, &y = all_[b].links;
    for (size_t w = 0; w < words_ && it->second; ++w) it->second = (x[w] & y[w]) == 0;
  }
  return it->second;
}

}  // namespace tessera::platforms
