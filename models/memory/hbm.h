// HBM: capacity and the bandwidth kernels and copies achieve against it.
#pragma once

#include <cstdint>

#include <systemc>

namespace tessera::models {

class HbmMemory {
 public:
  HbmMemory(double capacity_bytes, double bandwidth_bytes_per_s, double efficiency)
      : capacity_(capacity_bytes), bandwidth_(bandwidth_bytes_per_s * efficiency) {}

  double capacity_bytes() const { return capacity_; }
  // Achievable bandwidth in bytes/s.
  double bandwidth() const { return bandwidth_; }
  // Seconds to move `bytes` to or from HBM at the achievable bandwidth.
  double transfer_seconds(double bytes) const { return bytes / bandwidth_; }

 private:
  double capacity_;
  double bandwidth_;
};

}  // namespace tessera::models
