// The analytic walk's events to come, earliest first, ties in the order they were pushed: a
// four-ary heap. The walk's queue holds a hundred events or so and takes millions off, and a pop
// is a chain of dependent loads, one per level: four children per node make half the levels of
// a binary heap, and the earliest of the four is found by two independent comparisons and a
// third, without a branch. A pop moves the hole down along the earliest children to a leaf, then
// the last event up into it (Floyd's bottom-up heap). Events are totally ordered (no two share a
// sequence number), so it gives them in exactly the order std::priority_queue would.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::analytic {

// (time, sequence) order, without a branch: `a` and `b` have `time` (a number, never NaN) and
// `sequence`.
template <typename A, typename B>
bool earlier(const A& a, const B& b) {
  return (a.time < b.time) | ((a.time == b.time) & (a.sequence < b.sequence));
}

// The earliest of the children of a four-ary heap's node whose first child is c (c < heap size):
// of four, by two independent comparisons and a third, without a branch; of one to three (the
// last node with children), one by one.
template <typename E>
size_t earliest_child(const std::vector<E>& heap, size_t c) {
  if (c + 3 < heap.size()) {
    const size_t a = c + earlier(heap[c + 1], heap[c]);
    const size_t b = c + 2 + earlier(heap[c + 3], heap[c + 2]);
    return earlier(heap[b], heap[a]) ? b : a;
  }
  size_t m = c;
  for (size_t k = c + 1; k < heap.size(); ++k) m = earlier(heap[k], heap[m]) ? k : m;
  return m;
}

// `E` has `time` (a number, never NaN) and `sequence` (unique).
template <typename E>
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const E& top() const { return heap_.front(); }
  void push(const E& e) {
    heap_.push_back(e);
    sift_up(heap_.size() - 1, e);
  }
  void pop() {
    const E last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (size_t c = 1; c < n; c = 4 * i + 1) {
      const size_t m = earliest_child(heap_, c);
      heap_[i] = heap_[m];
      i = m;
    }
    sift_up(i, last);
  }

 private:
  void sift_up(size_t i, const E& e) {
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!earlier(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  std::vector<E> heap_;
};

// One entry per key 0..n-1 at most, earliest (time, sequence) first, whose entries change in
// place: the analytic walk's running kernels, one per rank walked, by the time each ends. A
// kernel's end moves when collectives take or give back SMs, and the next kernel of a rank most
// often starts as the last one ends: both are an entry changed where it is (one sift), where a
// heap of events would take a pop and a push, and keep the moved end's old event until it came
// up. Four-ary, as EventQueue.
class KeyedQueue {
 public:
  struct Entry {
    double time;
    uint64_t sequence;
    uint32_t key;
  };
  explicit KeyedQueue(size_t keys = 0) : position_(keys, kAbsent) {}
  bool empty() const { return heap_.empty(); }
  const Entry& top() const { return heap_.front(); }
  bool contains(uint32_t key) const { return position_[key] != kAbsent; }
  // Adds `key` or moves it to (time, sequence).
  void set(uint32_t key, double time, uint64_t sequence) {
    const Entry e{time, sequence, key};
    size_t i = position_[key];
    if (i == kAbsent) {
      heap_.push_back(e);
      up(heap_.size() - 1, e);
    } else if (earlier(e, heap_[i])) {
      up(i, e);
    } else {
      down(i, e);
    }
  }
  void erase(uint32_t key) {
    const size_t i = position_[key];
    if (i == kAbsent) return;
    position_[key] = kAbsent;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    if (earlier(last, heap_[i])) up(i, last);
    else down(i, last);
  }

 private:
  static constexpr size_t kAbsent = ~size_t(0);
  void place(size_t i, const Entry& e) {
    heap_[i] = e;
    position_[e.key] = i;
  }
  void up(size_t i, const Entry& e) {
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!earlier(e, heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
  }
  void down(size_t i, const Entry& e) {
    const size_t n = heap_.size();
    for (size_t c = 4 * i + 1; c < n; c = 4 * i + 1) {
      const size_t m = earliest_child(heap_, c);
      if (!earlier(heap_[m], e)) break;
      place(i, heap_[m]);
      i = m;
    }
    place(i, e);
  }

  std::vector<Entry> heap_;
  std::vector<size_t> position_;  // by key: its place in heap_, kAbsent when not there
};

}  // namespace tessera::analytic
