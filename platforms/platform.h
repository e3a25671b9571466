// A platform: which GPUs, how many, and the fabric between them. The builder (Platform)
// instantiates the SystemC modules, binds their sockets through links and fills the switches'
// routing tables.
//
// The first platform kind is one node of GPUs on an NVSwitch fabric: every GPU has its NVLink
// ports split evenly over `nvswitches` switch planes; each plane is one NvSwitch with a port per
// GPU, and each GPU-to-plane port group is one link of (links per plane x per-link bandwidth).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/gpu/gpu.h"
#include "models/link/link.h"
#include "models/switch/nvswitch.h"
#include "tlm/link_timing.h"
#include "tlm/payload_pool.h"
#include "workloads/program.h"

namespace tessera::platforms {

// NVLink packets carry at most 128 data bytes behind a 16-byte header flit and a 16-byte
// address-extension/byte-enable flit: 128/160 = 80% of the line rate, the ~20 GB/s per 25 GB/s
// link that NCCL assumes for NVLink3/4 (its topology's per-link bandwidth).
struct LinkConfig {
  double latency_ns = 150.0;               // propagation and PHY latency, one direction
  uint32_t packet_overhead_bytes = 32;     // header and extension flits per packet
  uint32_t max_packet_payload_bytes = 128; // payload bytes per packet
};

struct PlatformConfig {
  std::string name = "dgx-h100";
  std::string description;
  models::GpuSpec gpu;
  int gpus = 8;
  int nvswitches = 1;                  // switch planes
  LinkConfig nvlink;
  double switch_latency_ns = 100.0;    // crossbar pipeline latency per switch hop
  bool in_switch_reduction = false;    // NVLink SHARP (NVSwitch gen3: DGX H100)
  uint64_t switch_buffer_bytes = 1 << 20;  // ingress buffer per switch port
  uint64_t gpu_buffer_bytes = 1 << 20;     // receive buffer per GPU port

  // Bandwidth of one GPU's port group into one plane, bytes/s per direction.
  double port_bandwidth() const;
  // The timing of a GPU <-> switch link.
  protocol::LinkTiming link_timing() const;
  // What the collective tuner knows of the fabric: a GPU's effective bandwidth over all its
  // planes, the GPU -> switch -> GPU latency, in-switch reduction.
  models::FabricFacts fabric_facts() const;
  // Throws std::invalid_argument naming the bad value.
  void validate() const;
};

// The built-in platforms of the foundation.
PlatformConfig dgx_h100();
PlatformConfig dgx_a100();
std::vector<std::string> builtin_platforms();
PlatformConfig builtin_platform(const std::string& name);  // throws std::invalid_argument

class Platform : public sc_core::sc_module {
 public:
  Platform(sc_core::sc_module_name name, const PlatformConfig& config, const workloads::Job& job,
           protocol::PayloadPool& pool, const models::CollectiveEngineConfig& collectives);

  const PlatformConfig& config() const { return config_; }
  size_t gpu_count() const { return gpus_.size(); }
  models::Gpu& gpu(size_t rank) { return *gpus_[rank]; }
  const models::Gpu& gpu(size_t rank) const { return *gpus_[rank]; }
  const std::vector<std::unique_ptr<models::Link>>& links() const { return links_; }
  const std::vector<std::unique_ptr<models::NvSwitch>>& switches() const { return switches_; }

 private:
  models::Link& connect(models::EgressPort& from, models::IngressPort& to, const std::string& name,
                        const protocol::LinkTiming& timing);

  PlatformConfig config_;
  std::vector<std::unique_ptr<models::Gpu>> gpus_;
  std::vector<std::unique_ptr<models::NvSwitch>> switches_;
  std::vector<std::unique_ptr<models::Link>> links_;
};

}  // namespace tessera::platforms
