// The platform builder: generates the topology (topology.h) and its routes (routing.h) from a
// PlatformConfig, instantiates a SystemC module for every device (GPU, NVSwitch, PCIe switch,
// root complex, NIC, network switch), binds their ports through links, and gives every
// forwarding module its router.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/gpu/gpu.h"
#include "models/link/link.h"
#include "models/switch/crossbar.h"
#include "platforms/platform_config.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tlm/payload_pool.h"
#include "workloads/program.h"

namespace tessera::platforms {

// What the collective tuner knows of a platform's NVLink fabric (bandwidth a GPU sends at, the
// GPU -> switch -> GPU latency, in-switch reduction, SMs).
models::FabricFacts fabric_facts(const PlatformConfig& config);

class Platform : public sc_core::sc_module {
 public:
  // `routed`: the platform's graph and routes when the caller already has them (made from the
  // same config); without, the builder generates and routes the topology itself.
  Platform(sc_core::sc_module_name name, const PlatformConfig& config, const workloads::Job& job,
           protocol::PayloadPool& pool, const models::CollectiveEngineConfig& collectives,
           std::shared_ptr<const RoutedTopology> routed = nullptr);
  ~Platform() override;

  const PlatformConfig& config() const { return config_; }
  const PlatformGraph& topology() const { return routed_->graph; }
  const Routing& routing() const { return routed_->routing; }
  size_t gpu_count() const { return gpus_.size(); }
  models::Gpu& gpu(size_t rank) { return *gpus_[rank]; }
  const models::Gpu& gpu(size_t rank) const { return *gpus_[rank]; }
  const std::vector<std::unique_ptr<models::Link>>& links() const { return links_; }
  const std::vector<std::unique_ptr<models::Crossbar>>& switches() const { return switches_; }

 private:
  struct NodeRouter;
  struct NetworkRouter;
  // The module of template device `device` in `node`, and its ports.
  models::EgressPort& egress(uint32_t node, uint32_t device, uint32_t port);
  models::IngressPort& ingress(uint32_t node, uint32_t device, uint32_t port);
  void connect(models::EgressPort& from, models::IngressPort& to, const std::string& name,
               const protocol::LinkTiming& timing, LinkKind kind);

  PlatformConfig config_;
  std::shared_ptr<const RoutedTopology> routed_;
  std::vector<std::unique_ptr<sc_core::sc_module>> groups_;  // node0.., network
  std::vector<std::unique_ptr<models::Gpu>> gpus_;
  std::vector<std::unique_ptr<models::Crossbar>> switches_;  // node devices, then network
  std::vector<uint32_t> node_module_;   // template device -> index among a node's crossbars
  uint32_t node_crossbars_ = 0;
  std::vector<std::unique_ptr<models::Link>> links_;
  std::deque<NodeRouter> node_routers_;
  std::deque<NetworkRouter> network_routers_;
};

}  // namespace tessera::platforms
