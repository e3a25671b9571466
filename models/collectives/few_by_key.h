// A few values by a 64-bit key, kept in one vector and searched in turn: a rank has a handful of
// point-to-point messages in flight, a GPU replaying another's calls a handful completed on one
// of the two only, and the node-based hash table it replaces cost two waits on memory per lookup
// and an allocation per entry (a rank's state leaves the caches between its events). Erasing
// moves the last entry into the gap, so the order of the entries is the order of the calls,
// never of addresses or hashes.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::models {

template <typename Value>
class FewByKey {
 public:
  // The value of `key`, made (value-initialized) where there is none. Valid until the next
  // call that adds or erases an entry.
  Value& operator[](uint64_t key) {
    if (Value* v = find(key)) return *v;
    entries_.emplace_back(key, Value{});
    return entries_.back().second;
  }
  Value* find(uint64_t key) {
    const size_t i = position(key);
    return i == kNone ? nullptr : &entries_[i].second;
  }
  void erase(uint64_t key) {
    if (const size_t i = position(key); i != kNone) erase_at(i);
  }
  // Where `key` is (kNone: absent), for a caller that reads and erases it, or adds it, with one
  // search.
  static constexpr size_t kNone = ~size_t(0);
  size_t position(uint64_t key) const {
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].first == key) return i;
    return kNone;
  }
  Value& at(size_t i) { return entries_[i].second; }
  void erase_at(size_t i) {
    if (i + 1 != entries_.size()) entries_[i] = std::move(entries_.back());
    entries_.pop_back();
  }
  // Adds `key`, which position() did not find.
  void add(uint64_t key, Value value) { entries_.emplace_back(key, std::move(value)); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<std::pair<uint64_t, Value>> entries_;
};

}  // namespace tessera::models
