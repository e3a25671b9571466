#include "platforms/platform_config.h"

#include <cmath>

namespace tessera::platforms {

protocol::LinkTiming LinkSpec::timing(double lanes) const {
  protocol::LinkTiming t;
  t.bandwidth_bytes_per_s = bandwidth_gb_per_s * 1e9 * lanes;
  t.latency = sc_core::sc_time(latency_ns, sc_core::SC_NS);
  t.packet_overhead_bytes = packet_overhead_bytes;
  t.max_packet_payload_bytes = max_packet_bytes;
  return t;
}

const char* topology_name(Topology t) {
  switch (t) {
    case Topology::None: return "none";
    case Topology::FatTree: return "fat-tree";
    case Topology::RailOptimized: return "rail-optimized";
    case Topology::Torus: return "torus";
    case Topology::Dragonfly: return "dragonfly";
    case Topology::NvlinkNetwork: return "nvlink-network";
    case Topology::LinkList: return "links";
  }
  return "?";
}

std::vector<std::string> topology_names() {
  return {"none", "fat-tree", "rail-optimized", "torus", "dragonfly", "nvlink-network", "links"};
}

int PlatformConfig::nvlinks_to_switch(int s) const {
  if (!node.nvlink.links_per_switch.empty()) return node.nvlink.links_per_switch.at(s);
  return node.nvlink.switches > 0 ? gpu.nvlink_ports / node.nvlink.switches : 0;
}

void PlatformConfig::validate() const {
  if (nodes < 1) throw PlatformError("nodes", "nodes must be at least 1");
  if (node.gpus < 1) throw PlatformError("node.gpus", "node.gpus must be at least 1");
}

}  // namespace tessera::platforms
