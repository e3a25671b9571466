// A GPU: command processor, compute engine, copy engine, collective engine, HBM and NVLink
// ports. The platform builder connects its ports to links.
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "models/collectives/collective_engine.h"
#include "models/gpu/activity.h"
#include "models/gpu/command_processor.h"
#include "models/gpu/compute_engine.h"
#include "models/flow/flow_fabric.h"
#include "models/gpu/gpu_spec.h"
#include "models/link/fabric_port.h"
#include "models/memory/hbm.h"
#include "models/switch/crossbar.h"

namespace tessera::models {

struct GpuConfig {
  GpuSpec spec;
  unsigned fabric_ports = 1;        // NVLink port groups (one per NVSwitch) and the PCIe port
  unsigned ingress_buffer_chunks = 8;
  // The collective engine's settings, shared by a platform's GPUs (null: the defaults).
  std::shared_ptr<const CollectiveSettings> collectives;
};

class Gpu : public sc_core::sc_module,
            public PacketSink,
            public FabricInjector,
            public SmObserver {
 public:
  // `latencies`: the collective engines' queue, shared by the platform's GPUs.
  Gpu(sc_core::sc_module_name name, int rank, const GpuConfig& config, const workloads::Job& job,
      protocol::PayloadPool& pool, CollectiveLatencies& latencies);

  int rank() const { return rank_; }
  const GpuSpec& spec() const { return config_.spec; }
  EgressPort& egress(unsigned port) { return *egress_[port]; }
  IngressPort& ingress(unsigned port) { return *ingress_[port]; }
  unsigned fabric_ports() const { return static_cast<unsigned>(egress_.size()); }
  // Which port a chunk leaves through (the platform's routing).
  void set_router(const Router& router) { router_ = &router; }
  // Flow fidelity: chunks go to the flow fabric instead of the ports (the GPU then has none).
  void set_flow_fabric(FabricInjector& fabric) {
    flow_fabric_ = &fabric;
    collectives_->inject_into(fabric);
  }

  CommandProcessor& command_processor() { return *command_processor_; }
  const CommandProcessor& command_processor() const { return *command_processor_; }
  const CollectiveEngine& collectives() const { return *collectives_; }
  CollectiveEngine& collectives() { return *collectives_; }
  const ComputeEngine& compute_engine() const { return *compute_; }
  // The compute model that times this GPU's kernels (null: the roofline). Not owned.
  void set_kernel_timer(const KernelTimer* timer) { compute_->set_kernel_timer(timer); }
  GpuActivity& activity() { return activity_; }
  // Parting (CommandProcessor::part): this GPU, a follower of `representative`, takes over its
  // state and runs its own program from now on: false (and nothing changed) where it cannot.
  bool part(Gpu& representative);
  const GpuActivity& activity() const { return activity_; }

  void packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) override;
  void inject(tlm::tlm_generic_payload& gp, PacketSource& source) override;
  // Collective kernels hold `sms` SMs: compute kernels get the rest.
  void collective_sms_changed(int sms) override;

 private:
  int rank_;
  std::unique_ptr<CollectiveEngine> collectives_;  // beside rank_: what a flow's arrival reads
  GpuConfig config_;
  GpuActivity activity_;
  std::unique_ptr<ComputeEngine> compute_;
  std::unique_ptr<ComputeEngine> copy_;
  std::unique_ptr<CommandProcessor> command_processor_;
  const Router* router_ = nullptr;
  FabricInjector* flow_fabric_ = nullptr;
  std::vector<std::unique_ptr<EgressPort>> egress_;
  std::vector<std::unique_ptr<IngressPort>> ingress_;
};

}  // namespace tessera::models
