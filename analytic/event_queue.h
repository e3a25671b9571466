// The analytic walk's events to come, earliest first, ties in the order they were pushed: a
// binary heap, as std::priority_queue, but one that takes an event off by moving the hole down
// along the earlier children without a branch, then the last event up into it (Floyd's
// bottom-up heap). The walk's queue holds a hundred events or so and takes millions off, so
// mispredicted branches cost it more than anything else. Events are totally ordered (no two
// share a sequence number), so it gives them in exactly the order std::priority_queue would.
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
    for (size_t c = 1; c + 1 < n; c = 2 * i + 1) {
      c += earlier(heap_[c + 1], heap_[c]);
      heap_[i] = heap_[c];
      i = c;
    }
    if (2 * i + 1 < n) {
      heap_[i] = heap_[2 * i + 1];
      i = 2 * i + 1;
    }
    sift_up(i, last);
  }

  static bool earlier(const E& a, const E& b) {
    return (a.time < b.time) | ((a.time == b.time) & (a.sequence < b.sequence));
  }

 private:
  void sift_up(size_t i, const E& e) {
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!earlier(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  std::vector<E> heap_;
};

}  // namespace tessera::analytic
