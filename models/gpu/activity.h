// Where a GPU's time goes: compute (a kernel runs), exposed communication (communication is in
// flight and no kernel runs) and idle (neither). Updated on every state change, never sampled.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

namespace tessera::models {

struct OpSpan {
  uint32_t op = 0;
  sc_core::sc_time start;
  sc_core::sc_time end;
};

class GpuActivity {
 public:
  void compute_begin() { change(1, 0); }
  void compute_end() { change(-1, 0); }
  void communication_begin() { change(0, 1); }
  void communication_end() { change(0, -1); }

  // Closes the books at `end` (the iteration's end), counting trailing idle time.
  void close(sc_core::sc_time end);

  sc_core::sc_time compute() const { return compute_; }
  sc_core::sc_time exposed_communication() const { return exposed_; }
  sc_core::sc_time overlapped_communication() const { return overlapped_; }
  sc_core::sc_time idle() const { return idle_; }

  // Op spans for the trace; recorded only when enabled.
  void enable_spans() { record_spans_ = true; }
  bool spans_enabled() const { return record_spans_; }
  void span(uint32_t op, sc_core::sc_time start, sc_core::sc_time end) {
    if (record_spans_) spans_.push_back(OpSpan{op, start, end});
  }
  const std::vector<OpSpan>& spans() const { return spans_; }

 private:
  void change(int compute, int communication);

  int computing_ = 0;
  int communicating_ = 0;
  sc_core::sc_time last_;
  sc_core::sc_time compute_, exposed_, overlapped_, idle_;
  bool record_spans_ = false;
  std::vector<OpSpan> spans_;
};

}  // namespace tessera::models
