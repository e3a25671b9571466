// How long a kernel takes: the GPU asks a KernelTimer. The models' own default is the roofline
// of ComputeEngine; calibration/ implements the compute model tessera runs with (GEMM time from
// the shape, memory-bound kernels from their bytes, measured kernel tables), and the command
// line hands it to every GPU, so dependencies stay one way (calibration -> models).
#pragma once

#include "tlm/extensions.h"

namespace tessera::models {

// One compute op's time on an otherwise idle GPU: what its kernels take on the device, and
// what the host adds where it cannot launch them as fast as they run (launch-bound ops).
struct KernelTime {
  double device_s = 0;
  double host_s = 0;
  double total() const { return device_s + host_s; }
};

class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual KernelTime kernel_time(const protocol::ComputeEvent& kernel) const = 0;
};

}  // namespace tessera::models
