// The analytic walk's events to come, earliest first, ties in the order they were pushed: a
// four-ary heap. The walk's queue holds a hundred events or so and takes millions off, and a pop
// is a chain of dependent loads, one per level: four children per node make half the levels of
// a binary heap, and the earliest of the four is found by two independent comparisons and a
// third, without a branch. A pop moves the hole down along the earliest children to a leaf, then
// the last event up into it (Floyd's bottom-up heap). Events are totally ordered (no two share a
// sequence number), so it gives them in exactly the order std::priority_queue would.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::analytic {

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
    for (size_t c = 1; c + 3 < n; c = 4 * i + 1) {
      const size_t a = c + earlier(heap_[c + 1], heap_[c]);
      const size_t b = c + 2 + earlier(heap_[c + 3], heap_[c + 2]);
      const size_t m = earlier(heap_[b], heap_[a]) ? b : a;
      heap_[i] = heap_[m];
      i = m;
    }
    // A node with one to three children: the earliest of them.
    if (size_t c = 4 * i + 1; c < n) {
      size_t m = c;
      for (size_t k = c + 1; k < n; ++k) m = earlier(heap_[k], heap_[m]) ? k : m;
      heap_[i] = heap_[m];
      i = m;
    }
    sift_up(i, last);
  }

  static bool earlier(const E& a, const E& b) {
    return (a.time < b.time) | ((a.time == b.time) & (a.sequence < b.sequence));
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

}  // namespace tessera::analytic
