// A payload event queue: payloads handed to a module's callback after a delay, as
// tlm_utils::peq_with_cb_and_phase does (equal times in the order notified; a zero delay in the
// next delta cycle; one event and one method process, notified at the same moments), with its
// timed payloads in a binary heap. The library's keeps them in a sorted linked list, walked
// from the earliest at every notification: a collective engine holds a payload per chunk in its
// step latency, and each notification walked past all of them. One queue serves many modules of
// a kind (each payload names the one it is for), so that thousands of them share one event and
// one process.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>

#include "tlm/sockets.h"

namespace tessera::protocol {

template <typename Module>
class PayloadEventQueue : public sc_core::sc_object {
 public:
  using Callback = void (Module::*)(tlm::tlm_generic_payload&, const tlm::tlm_phase&);

  PayloadEventQueue(const char* name, Callback callback)
      : sc_core::sc_object(name), callback_(callback) {
    spawn_method(sc_core::sc_gen_unique_name("fire"), &event_, [this] { fire(); });
  }

  // Hands `gp` and `phase` to `owner`'s callback `delay` from now (zero: in the next delta cycle).
  void notify(Module& owner, tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase,
              const sc_core::sc_time& delay) {
    if (delay == sc_core::SC_ZERO_TIME) {
      // (An odd delta cycle's zero delay is for the even one after it, and the other way round.)
      (sc_core::sc_delta_count() & 1 ? even_ : odd_).push_back(Delta{&owner, &gp, phase});
      event_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    timed_.push_back(Timed{(sc_core::sc_time_stamp() + delay).value(), sequence_++, &owner, &gp, phase});
    std::push_heap(timed_.begin(), timed_.end(), Later{});
    event_.notify(delay);  // (an earlier pending notification stands)
  }

 private:
  struct Delta {
    Module* owner;
    tlm::tlm_generic_payload* gp;
    tlm::tlm_phase phase;
  };
  struct Timed {
    sc_dt::uint64 time;
    uint64_t sequence;
    Module* owner;
    tlm::tlm_generic_payload* gp;
    tlm::tlm_phase phase;
  };
  struct Later {  // the heap's order: the earliest first, equal times in the order notified
    bool operator()(const Timed& a, const Timed& b) const {
      return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
    }
  };

  void fire() {
    const bool odd = sc_core::sc_delta_count() & 1;
    std::vector<Delta>& now_due = odd ? odd_ : even_;
    for (size_t i = 0; i < now_due.size(); ++i) (now_due[i].owner->*callback_)(*now_due[i].gp, now_due[i].phase);
    now_due.clear();
    if (!(odd ? even_ : odd_).empty()) event_.notify(sc_core::SC_ZERO_TIME);
    if (timed_.empty()) return;
    const sc_dt::uint64 now = sc_core::sc_time_stamp().value();
    while (!timed_.empty() && timed_.front().time == now) {
      const Timed due = timed_.front();
      std::pop_heap(timed_.begin(), timed_.end(), Later{});
      timed_.pop_back();
      (due.owner->*callback_)(*due.gp, due.phase);
    }
    if (!timed_.empty()) event_.notify(sc_core::sc_time::from_value(timed_.front().time - now));
  }

  Callback callback_;
  sc_core::sc_event event_;
  std::vector<Timed> timed_;       // a heap (Later)
  std::vector<Delta> odd_, even_;  // due in the next odd and even delta cycles
  uint64_t sequence_ = 0;
};

}  // namespace tessera::protocol
