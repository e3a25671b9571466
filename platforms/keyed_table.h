// Values by a 64-bit key in one open-addressed array (linear probing, at most half full, the
// slot picked by Fibonacci hashing): a lookup mostly reads one slot, where a node-based hash
// table reads a bucket and then a node elsewhere in memory, and divides by a prime first. The
// flow paths look a network leg up per transfer between nodes, millions of times a run, in a
// table too large to stay in the caches. Entries are added, never removed.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tessera::platforms {

// A key for content stored once and found again by it (FNV-1a over whole values): network legs'
// pieces, routing columns' blocks and lists, groups of keys. Equal content, equal key; a hit
// is checked against the content.
struct ContentHash {
  uint64_t value = 0xcbf29ce484222325ull;
  ContentHash& add(uint64_t v) {
    value = (value ^ v) * 0x100000001b3ull;
    return *this;
  }
  ContentHash& add(double v) {  // by its bits
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
};

template <typename Value>
class KeyedTable {
 public:
  // The value of `key`, or nullptr. Valid until the next insert.
  const Value* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  // Adds `key`, which the table does not hold.
  void insert(uint64_t key, Value value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, std::move(value));
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{};
    bool used = false;
  };
  size_t slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void place(uint64_t key, Value value) {
    size_t i = slot(key);
    while (slots_[i].used) {
      if (slots_[i].key == key) throw std::logic_error("KeyedTable: a key added twice");
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{key, std::move(value), true};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 64 : 2 * old.size();
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (Slot& s : old)
      if (s.used) place(s.key, std::move(s.value));
  }

  std::vector<Slot> slots_;
  size_t size_ = 0, mask_ = 0;
  unsigned shift_ = 64;  // 64 - log2(capacity): the hash's top bits pick the slot
};

}  // namespace tessera::platforms
