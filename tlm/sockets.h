// Socket aliases: every tessera port is a single simple socket; multi-port modules hold arrays
// of ports (one style throughout, see docs/architecture.md).
#pragma once

#include <functional>

#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace tessera::protocol {

template <typename Module>
using InitiatorSocket = tlm_utils::simple_initiator_socket<Module>;
template <typename Module>
using TargetSocket = tlm_utils::simple_target_socket<Module>;
template <typename Module>
using PayloadEventQueue = tlm_utils::peq_with_cb_and_phase<Module>;

// The internal phase an ingress port uses for "the whole chunk has arrived".
DECLARE_EXTENDED_PHASE(ARRIVED);

// Time resolution of every tessera simulation; set before any sc_time is made.
void set_time_resolution();

// Spawns a method process of the current module that runs `body` whenever `trigger` fires
// (never at time zero), or once at time zero when `trigger` is null.
void spawn_method(const char* name, const sc_core::sc_event* trigger, std::function<void()> body);

}  // namespace tessera::protocol
