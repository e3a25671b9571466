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

#include "models/flow/flow_fabric.h"
#include "models/gpu/gpu.h"
#include "models/link/link.h"
#include "models/rtl/transactor.h"
#include "models/switch/crossbar.h"
#include "platforms/aggregation.h"
#include "platforms/flow_paths.h"
#include "platforms/platform_config.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tlm/payload_pool.h"
#include "workloads/program.h"

namespace tessera::platforms {

// What the collective tuner knows of a platform's fabric (bandwidth a GPU sends at, the
// GPU -> switch -> GPU latency, in-switch reduction, SMs; the network's latency and whether its
// switches reduce).
models::FabricFacts fabric_facts(const PlatformConfig& config);

// How transfers cross the fabric (docs/fidelity.md).
enum class Fidelity {
  Packet,  // every chunk through every port, link and switch module
  Flow,    // one flow per transfer, max-min fair shares of the links on its path
  Analytic,  // no simulation: the programs costed op by op (analytic/, docs/analytic.md)
};
const char* fidelity_name(Fidelity f);
bool parse_fidelity(const std::string& name, Fidelity& out);

class Platform : public sc_core::sc_module {
 public:
  // Packet fidelity builds a module per device and binds their ports through links. Flow
  // fidelity builds the GPUs and one flow fabric over the same topology and routes (no switch
  // or link modules; collective schedules run in their steady state). `routed`: the platform's
  // graph and routes when the caller already has them (made from the same config); without,
  // the builder generates and routes the topology itself.
  Platform(sc_core::sc_module_name name, const PlatformConfig& config, const workloads::Job& job,
           protocol::PayloadPool& pool, const models::CollectiveEngineConfig& collectives,
           Fidelity fidelity = Fidelity::Packet, std::shared_ptr<const RoutedTopology> routed = nullptr);
  ~Platform() override;

  Fidelity fidelity() const { return fidelity_; }
  // Flow fidelity only (null in packet mode): the fabric and its links' names and kinds.
  const models::FlowFabric* flow_fabric() const { return flow_fabric_.get(); }
  models::FlowFabric* flow_fabric() { return flow_fabric_.get(); }
  const RoutedPaths* flow_paths() const { return flow_paths_.get(); }

  const PlatformConfig& config() const { return config_; }
  const PlatformGraph& topology() const { return routed_->graph; }
  const Routing& routing() const { return routed_->routing; }
  size_t gpu_count() const { return gpus_.size(); }
  models::Gpu& gpu(size_t rank) { return *gpus_[rank]; }
  const models::Gpu& gpu(size_t rank) const { return *gpus_[rank]; }
  const std::vector<std::unique_ptr<models::Link>>& links() const { return links_; }
  const std::vector<std::unique_ptr<models::Crossbar>>& switches() const { return switches_; }
  // The RTL blocks at ports (docs/cosim.md), in the order of the switches and their ports.
  const std::vector<std::unique_ptr<rtl::Transactor>>& rtl_ports() const { return rtl_ports_; }

 private:
  struct NodeRouter;
  struct NetworkRouter;
  // The module of template device `device` in `node`, and its ports.
  models::EgressPort& egress(uint32_t node, uint32_t device, uint32_t port);
  models::IngressPort& ingress(uint32_t node, uint32_t device, uint32_t port);
  void connect(models::EgressPort& from, models::IngressPort& to, const std::string& name,
               const protocol::LinkTiming& timing, LinkKind kind);
  // Puts the RTL blocks the config names at their ports (after the links are bound).
  void attach_rtl(uint64_t chunk_bytes);
  // A torus or dragonfly: one slot of each switch port's buffer kept for the chunks that break
  // a cycle of full buffers (EgressPort::reserve_last_slot; their routes: RouteRule in
  // routing.cpp), after the links are bound. Throws PlatformError where a port's buffer holds
  // fewer than two chunks.
  void deadlock_free_buffers(uint64_t chunk_bytes);

  PlatformConfig config_;
  Fidelity fidelity_;
  std::shared_ptr<const RoutedTopology> routed_;
  std::unique_ptr<AggregationTrees> trees_;  // in-network reduction
  std::vector<std::unique_ptr<sc_core::sc_module>> groups_;  // node0.., network
  std::unique_ptr<models::CollectiveLatencies> collective_latencies_;  // every GPU's engine's
  std::vector<std::unique_ptr<models::Gpu>> gpus_;
  std::vector<std::unique_ptr<models::Crossbar>> switches_;  // node devices, then network
  std::vector<uint32_t> node_module_;   // template device -> index among a node's crossbars
  uint32_t node_crossbars_ = 0;
  std::vector<std::unique_ptr<models::Link>> links_;
  std::vector<std::unique_ptr<rtl::Transactor>> rtl_ports_;
  std::deque<NodeRouter> node_routers_;
  std::deque<NetworkRouter> network_routers_;
  std::unique_ptr<RoutedPaths> flow_paths_;
  std::unique_ptr<models::FlowFabric> flow_fabric_;
};

}  // namespace tessera::platforms
