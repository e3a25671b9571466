#include "tlm/sockets.h"

namespace tessera::protocol {

void set_time_resolution() {
  static bool done = false;
  if (!done) {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    done = true;
  }
}

}  // namespace tessera::protocol
