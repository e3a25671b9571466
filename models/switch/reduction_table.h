// The switch side of in-network reduction, reusable by any switch model (NVSwitch NVLink SHARP
// today, an InfiniBand SHARP switch later): counts the contributions that arrived for each
// reduced chunk and says when the last member's has come. Open addressing on a power-of-two
// table that grows by doubling and never shrinks, so steady state allocates nothing per chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::models {

class ReductionTable {
 public:
  // One contribution to chunk (flow, part) whose reduction has `members` contributions.
  // Returns true when this was the last one: the entry is gone and the sum is ready to leave.
  bool contribute(uint64_t flow, uint64_t part, uint32_t members) {
    if (members <= 1) return true;
    if (2 * (used_ + 1) > slots_.size()) grow();
    size_t i = find(flow, part);
    Slot& s = slots_[i];
    if (!s.busy) {
      s = Slot{flow, part, 1, true};
      ++used_;
      return false;
    }
    if (++s.count < members) return false;
    erase(i);
    return true;
  }
  // Reductions with some but not all contributions (a member that never joined).
  size_t pending() const { return used_; }

 private:
  struct Slot {
    uint64_t flow = 0, part = 0;
    uint32_t count = 0;
    bool busy = false;
  };
  size_t home(uint64_t flow, uint64_t part) const {
    uint64_t h = flow * 0x9e3779b97f4a7c15ull ^ (part + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    return static_cast<size_t>(h) & (slots_.size() - 1);
  }
  size_t find(uint64_t flow, uint64_t part) const {
    size_t i = home(flow, part);
    while (slots_[i].busy && (slots_[i].flow != flow || slots_[i].part != part))
      i = (i + 1) & (slots_.size() - 1);
    return i;
  }
  // Backward-shift deletion keeps probe chains intact without tombstones.
  void erase(size_t i) {
    const size_t mask = slots_.size() - 1;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!slots_[j].busy) break;
      const size_t k = home(slots_[j].flow, slots_[j].part);
      const bool movable = i <= j ? (k <= i || k > j) : (k <= i && k > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --used_;
  }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : slots_.size() * 2);
    old.swap(slots_);
    used_ = 0;
    for (const Slot& s : old)
      if (s.busy) {
        slots_[find(s.flow, s.part)] = s;
        ++used_;
      }
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace tessera::models
