#include "models/gpu/gpu.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tessera::models {

Gpu::Gpu(sc_core::sc_module_name name, int rank, const GpuConfig& config,
         const workloads::Job& job, protocol::PayloadPool& pool, CollectiveLatencies& latencies)
    : sc_module(name),
      rank_(rank),
      config_(config) {
  compute_ = std::make_unique<ComputeEngine>("compute_engine", config_.spec, activity_, false);
  copy_ = std::make_unique<ComputeEngine>("copy_engine", config_.spec, activity_, true);
  collectives_ = std::make_unique<CollectiveEngine>("collective_engine", rank, job, pool, *this, latencies,
                                                    config_.collectives ? config_.collectives
                                                                        : std::make_shared<const CollectiveSettings>(
                                                                              CollectiveEngineConfig{}),
                                                    this);
  command_processor_ = std::make_unique<CommandProcessor>("command_processor", pool, activity_);
  command_processor_->to_compute.bind(compute_->socket);
  command_processor_->to_copy.bind(copy_->socket);
  command_processor_->to_collectives.bind(collectives_->socket);
  for (unsigned p = 0; p < config_.fabric_ports; ++p) {
    // Two inputs, arbitrated round-robin: chunks of consecutive steps come from different
    // SMs/warps and share the port fairly (an NVLS multicast does not queue behind the
    // whole reduce phase).
    egress_.push_back(std::make_unique<EgressPort>(("out" + std::to_string(p)).c_str(), 2));
    ingress_.push_back(std::make_unique<IngressPort>(("in" + std::to_string(p)).c_str(),
                                                     *this, p, config_.ingress_buffer_chunks));
  }
}

void Gpu::inject(tlm::tlm_generic_payload& gp, PacketSource& source) {
  if (flow_fabric_ != nullptr) return flow_fabric_->inject(gp, source);
  if (router_ == nullptr) throw std::logic_error(std::string(name()) + " has no router");
  const unsigned port = router_->route(protocol::fabric_transfer(gp));
  if (port >= egress_.size())
    throw std::logic_error(std::string(name()) + ": route to port " + std::to_string(port));
  egress_[port]->enqueue(protocol::fabric_transfer(gp).step & 1, gp, source);
}

bool Gpu::part(Gpu& representative) {
  CommandProcessor& cp = *command_processor_;
  if (!cp.can_part()) return false;
  activity_ = representative.activity_;
  cp.part();
  const auto payload = [&cp](uint32_t op) { return cp.kernel_payload(op); };
  compute_->adopt(*representative.compute_, payload);
  copy_->adopt(*representative.copy_, payload);
  for (int communicator : cp.left_out_communicators()) collectives_->join_late(communicator);
  cp.resume();
  return true;
}

void Gpu::collective_sms_changed(int sms) {
  const int total = std::max(1, config_.spec.sm_count);
  compute_->set_sm_share(double(std::max(0, total - sms)) / total);
}

void Gpu::packet_arrived(unsigned port, tlm::tlm_generic_payload& gp) {
  collectives_->check_receiver(gp);
  ingress_[port]->packet_left(gp);  // the engine drains its receive buffer at once
  collectives_->chunk_arrived(gp);
}

}  // namespace tessera::models
