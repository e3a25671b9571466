#include "platforms/platform.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::platforms {

double PlatformConfig::port_bandwidth() const {
  return double(gpu.nvlink_ports / nvswitches) * gpu.nvlink_port_bandwidth_gbps * 1e9;
}

protocol::LinkTiming PlatformConfig::link_timing() const {
  protocol::LinkTiming t;
  t.bandwidth_bytes_per_s = port_bandwidth();
  t.latency = sc_core::sc_time(nvlink.latency_ns, sc_core::SC_NS);
  t.packet_overhead_bytes = nvlink.packet_overhead_bytes;
  t.max_packet_payload_bytes = nvlink.max_packet_payload_bytes;
  return t;
}

models::FabricFacts PlatformConfig::fabric_facts() const {
  models::FabricFacts f;
  // Payload bandwidth of back-to-back full packets (no sc_time here: callable before SystemC
  // has its time resolution).
  const double payload = nvlink.max_packet_payload_bytes;
  const double efficiency = payload > 0 ? payload / (payload + nvlink.packet_overhead_bytes) : 1.0;
  f.gpu_bandwidth = nvswitches * port_bandwidth() * efficiency;
  f.hop_latency_s = (2 * nvlink.latency_ns + switch_latency_ns) * 1e-9;
  f.in_switch_reduction = in_switch_reduction;
  f.sm_count = gpu.sm_count;
  return f;
}

void PlatformConfig::validate() const {
  auto positive = [](double v, const std::string& key) {
    if (!(v > 0) || !std::isfinite(v))
      throw std::invalid_argument(key + " must be positive, got " + std::to_string(v));
  };
  positive(gpus, "gpus");
  positive(nvswitches, "nvswitches");
  positive(gpu.nvlink_ports, "gpu.nvlink_ports");
  positive(gpu.nvlink_port_bandwidth_gbps, "nvlink bandwidth");
  positive(gpu.hbm_bandwidth_gbps, "gpu.hbm_bandwidth_gbps");
  positive(gpu.hbm_capacity_gib, "gpu.hbm_capacity_gib");
  positive(gpu.compute_efficiency, "gpu.compute_efficiency");
  positive(gpu.hbm_efficiency, "gpu.hbm_efficiency");
  for (double p : gpu.peak_tflops) positive(p, "gpu.peak_tflops");
  if (gpu.compute_efficiency > 1 || gpu.hbm_efficiency > 1)
    throw std::invalid_argument("efficiencies must not exceed 1");
  if (nvlink.latency_ns < 0) throw std::invalid_argument("nvlink latency must not be negative");
  if (switch_latency_ns < 0) throw std::invalid_argument("switch latency must not be negative");
  if (gpu.kernel_overhead_us < 0)
    throw std::invalid_argument("gpu.kernel_overhead_us must not be negative");
  if (gpu.nvlink_ports % nvswitches != 0)
    throw std::invalid_argument("nvswitches (" + std::to_string(nvswitches) +
                                ") must divide the GPU's NVLink ports (" +
                                std::to_string(gpu.nvlink_ports) + ")");
  positive(double(switch_buffer_bytes), "switch buffer");
  positive(double(gpu_buffer_bytes), "gpu buffer");
}

PlatformConfig dgx_h100() {
  PlatformConfig c;
  c.name = "dgx-h100";
  c.description = "one DGX H100-like node: 8 H100-SXM5-80GB, 18 NVLink4 ports each (450 GB/s), NVSwitch";
  c.gpu = models::GpuSpec{};  // H100-SXM5-80GB
  c.gpus = 8;
  c.in_switch_reduction = true;  // third-generation NVSwitch: NVLink SHARP
  return c;
}

PlatformConfig dgx_a100() {
  PlatformConfig c;
  c.name = "dgx-a100";
  c.description = "one DGX A100-like node: 8 A100-SXM4-80GB, 12 NVLink3 ports each (300 GB/s), NVSwitch";
  models::GpuSpec& g = c.gpu;
  g.name = "A100-SXM4-80GB";
  g.peak_tflops = {19.5, 156.0, 312.0, 312.0, 312.0};  // no fp8: runs at fp16 rate
  g.compute_efficiency = 271.2 / 312.0;  // best achievable matmul (ml-engineering MAMF)
  g.hbm_capacity_gib = 80.0;
  g.hbm_bandwidth_gbps = 2039.0;
  g.hbm_efficiency = 1700.0 / 2039.0;    // STREAM triad 1.70 TB/s
  g.sm_count = 108;
  g.nvlink_ports = 12;
  g.nvlink_port_bandwidth_gbps = 25.0;
  c.gpus = 8;
  return c;
}

std::vector<std::string> builtin_platforms() { return {"dgx-h100", "dgx-a100"}; }

PlatformConfig builtin_platform(const std::string& name) {
  if (name == "dgx-h100") return dgx_h100();
  if (name == "dgx-a100") return dgx_a100();
  throw std::invalid_argument("unknown platform '" + name + "' (known: dgx-h100, dgx-a100)");
}

Platform::Platform(sc_core::sc_module_name name, const PlatformConfig& config,
                   const workloads::Job& job, protocol::PayloadPool& pool,
                   const models::CollectiveEngineConfig& engine)
    : sc_module(name), config_(config) {
  config_.validate();
  if (static_cast<size_t>(config_.gpus) != job.ranks.size())
    throw std::invalid_argument("the workload has " + std::to_string(job.ranks.size()) +
                                " ranks but the platform has " + std::to_string(config_.gpus) +
                                " GPUs");
  // What the collective tuner knows of this fabric.
  models::CollectiveEngineConfig collectives = engine;
  collectives.fabric = config_.fabric_facts();
  const protocol::LinkTiming timing = config_.link_timing();
  const uint64_t chunk = std::max<uint64_t>(1, collectives.chunk_bytes);
  auto chunks = [chunk](uint64_t bytes) {
    return static_cast<unsigned>(std::max<uint64_t>(1, bytes / chunk));
  };

  models::GpuConfig gpu_config;
  gpu_config.spec = config_.gpu;
  gpu_config.fabric_ports = static_cast<unsigned>(config_.nvswitches);
  gpu_config.ingress_buffer_chunks = chunks(config_.gpu_buffer_bytes);
  gpu_config.collectives = collectives;
  for (int r = 0; r < config_.gpus; ++r)
    gpus_.push_back(std::make_unique<models::Gpu>(("gpu" + std::to_string(r)).c_str(), r,
                                                  gpu_config, job, pool));

  models::NvSwitchConfig switch_config;
  switch_config.ports = static_cast<unsigned>(config_.gpus);
  switch_config.buffer_chunks = chunks(config_.switch_buffer_bytes);
  switch_config.hop_latency = sc_core::sc_time(config_.switch_latency_ns, sc_core::SC_NS);
  switch_config.in_switch_reduction = config_.in_switch_reduction;
  switch_config.pool = &pool;
  for (int s = 0; s < config_.nvswitches; ++s) {
    auto sw = std::make_unique<models::NvSwitch>(("nvswitch" + std::to_string(s)).c_str(),
                                                 switch_config);
    for (int r = 0; r < config_.gpus; ++r) {
      const std::string tag = std::to_string(s) + "_gpu" + std::to_string(r);
      connect(gpus_[r]->egress(s), sw->ingress(r), "nvlink_up" + tag, timing);
      connect(sw->egress(r), gpus_[r]->ingress(s), "nvlink_down" + tag, timing);
      sw->set_route(static_cast<unsigned>(r), {static_cast<unsigned>(r)});
    }
    switches_.push_back(std::move(sw));
  }
}

models::Link& Platform::connect(models::EgressPort& from, models::IngressPort& to,
                                const std::string& name, const protocol::LinkTiming& timing) {
  links_.push_back(std::make_unique<models::Link>(name.c_str(), timing, "nvlink"));
  models::Link& link = *links_.back();
  from.socket.bind(link.in);
  link.out.bind(to.socket);
  from.attach(link);
  return link;
}

}  // namespace tessera::platforms
