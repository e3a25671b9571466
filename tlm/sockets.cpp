#include "tlm/sockets.h"

#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn

namespace tessera::protocol {

void set_time_resolution() {
  static bool done = false;
  if (!done) {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    done = true;
  }
}

void spawn_method(const char* name, const sc_core::sc_event* trigger, std::function<void()> body) {
  sc_core::sc_spawn_options options;
  options.spawn_method();
  if (trigger != nullptr) {
    options.dont_initialize();
    options.set_sensitivity(trigger);
  }
  sc_core::sc_spawn(std::move(body), name, &options);
}

}  // namespace tessera::protocol
