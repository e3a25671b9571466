// An op's explicit dependencies: a list of earlier ops of the same program.
//
// Almost every op names none, one or two (a compute op waiting for a receive or a collective;
// a send waiting for the kernel that wrote its buffer), and a large job has millions of ops, so
// up to three are kept inside the op and only longer lists (a job file may name any number) on
// the heap. 16 bytes, against 24 for a std::vector, and no allocation per op.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace tessera::workloads {

using OpId = uint32_t;

class DepList {
 public:
  DepList() = default;
  DepList(std::initializer_list<OpId> ids) { assign(ids.begin(), ids.end()); }
  template <typename It>
  DepList(It first, It last) {
    assign(first, last);
  }
  DepList(const DepList& other) { assign(other.begin(), other.end()); }
  DepList(DepList&& other) noexcept : size_(other.size_) {
    std::memcpy(words_, other.words_, sizeof words_);
    other.size_ = 0;
  }
  DepList& operator=(const DepList& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  DepList& operator=(DepList&& other) noexcept {
    if (this == &other) return *this;
    release();
    size_ = other.size_;
    std::memcpy(words_, other.words_, sizeof words_);
    other.size_ = 0;
    return *this;
  }
  ~DepList() { release(); }

  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }
  void push_back(OpId id) {
    if (size_ == capacity(size_)) grow();
    ++size_;
    data()[size_ - 1] = id;
  }
  void clear() {
    release();
    size_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const OpId* begin() const { return data(); }
  const OpId* end() const { return data() + size_; }
  OpId operator[](size_t i) const { return data()[i]; }
  bool operator==(const DepList& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin());
  }
  bool operator!=(const DepList& other) const { return !(*this == other); }

 private:
  static constexpr uint32_t kInPlace = 3;
  // Room for `size` ids: in place up to kInPlace, then the next power of two on the heap.
  static uint32_t capacity(uint32_t size) {
    if (size <= kInPlace) return kInPlace;
    uint32_t c = 4;
    while (c < size) c *= 2;
    return c;
  }
  bool on_heap() const { return size_ > kInPlace; }
  OpId* heap() const {
    OpId* p;
    std::memcpy(&p, words_, sizeof p);
    return p;
  }
  const OpId* data() const { return on_heap() ? heap() : words_; }
  OpId* data() { return on_heap() ? heap() : words_; }
  // Moves the ids to a heap array with room for one more (the caller then counts it).
  void grow() {
    OpId* bigger = new OpId[capacity(size_ + 1)];
    std::copy(begin(), end(), bigger);
    release();
    std::memcpy(words_, &bigger, sizeof bigger);
  }
  void release() {
    if (on_heap()) delete[] heap();
  }

  uint32_t size_ = 0;
  OpId words_[kInPlace] = {};  // the ids in place, or the heap array's address
};

}  // namespace tessera::workloads
