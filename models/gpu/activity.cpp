#include "models/gpu/activity.h"

namespace tessera::models {

void GpuActivity::change(int compute, int communication) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time elapsed = now - last_;
  if (computing_ > 0) {
    compute_ += elapsed;
    if (communicating_ > 0) overlapped_ += elapsed;
  } else if (communicating_ > 0) {
    exposed_ += elapsed;
  } else {
    idle_ += elapsed;
  }
  last_ = now;
  computing_ += compute;
  communicating_ += communication;
}

void GpuActivity::close(sc_core::sc_time end) {
  if (end > last_) {
    const sc_core::sc_time elapsed = end - last_;
    if (computing_ > 0) compute_ += elapsed;
    else if (communicating_ > 0) exposed_ += elapsed;
    else idle_ += elapsed;
    last_ = end;
  }
}

}  // namespace tessera::models
