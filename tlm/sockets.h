// Socket aliases: every tessera port is a single simple socket; multi-port modules hold arrays
// of ports (one style throughout, see docs/architecture.md).
#pragma once

#include <functional>

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

namespace tessera::protocol {

template <typename Module>
using InitiatorSocket = tlm_utils::simple_initiator_socket<Module>;
// A target socket for the non-blocking protocol only. tlm_utils::simple_target_socket starts
// a thread per socket to serve b_transport through nb_transport, and a SystemC thread's stack
// is a memory mapping of its own: at three sockets per GPU, 65,536 GPUs passed the kernel's
// limit on a process's mappings (vm.max_map_count, 65,530 by default) and the run failed to
// allocate a stack. tessera's modules never call b_transport; one that did gets an error.
template <typename Module>
class TargetSocket : public tlm::tlm_target_socket<32>, private tlm::tlm_fw_transport_if<> {
 public:
  using Callback = tlm::tlm_sync_enum (Module::*)(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&);
  explicit TargetSocket(const char* name) : tlm::tlm_target_socket<32>(name) {
    bind(static_cast<tlm::tlm_fw_transport_if<>&>(*this));
  }
  void register_nb_transport_fw(Module* module, Callback callback) {
    module_ = module;
    callback_ = callback;
  }

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_core::sc_time& t) override {
    if (module_ == nullptr) SC_REPORT_FATAL(name(), "no nb_transport_fw callback registered");
    return (module_->*callback_)(gp, phase, t);
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {
    SC_REPORT_FATAL(name(), "b_transport: tessera's modules speak the non-blocking protocol only");
  }
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }

  Module* module_ = nullptr;
  Callback callback_ = nullptr;
};
// The internal phase an ingress port uses for "the whole chunk has arrived".
DECLARE_EXTENDED_PHASE(ARRIVED);

// Time resolution of every tessera simulation; set before any sc_time is made.
void set_time_resolution();

// Spawns a method process of the current module that runs `body` whenever `trigger` fires
// (never at time zero), or once at time zero when `trigger` is null.
void spawn_method(const char* name, const sc_core::sc_event* trigger, std::function<void()> body);

}  // namespace tessera::protocol
