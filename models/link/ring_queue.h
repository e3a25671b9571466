// A FIFO on a power-of-two ring that grows by doubling and never shrinks: queues of chunks
// allocate only while they reach a new high-water mark, never per chunk in steady state.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace tessera::models {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  T& front() { return slots_[head_ & mask_]; }
  T& back() { return slots_[(tail_ - 1) & mask_]; }
  void push(T value) {
    if (size() == slots_.size()) grow();
    slots_[tail_++ & mask_] = std::move(value);
  }
  T pop() { return std::move(slots_[head_++ & mask_]); }
  // The i-th value from the front.
  const T& operator[](size_t i) const { return slots_[(head_ + i) & mask_]; }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 16 : slots_.size() * 2);
    for (size_t i = 0; i < size(); ++i) bigger[i] = std::move(slots_[(head_ + i) & mask_]);
    tail_ = size();
    head_ = 0;
    slots_ = std::move(bigger);
    mask_ = slots_.size() - 1;
  }
  std::vector<T> slots_;
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace tessera::models
