// What a platform is, as a plain description: GPU type, the node (GPUs, NVLink/NVSwitch fabric,
// PCIe tree, NICs, host), the scale-out network and the node count. A platform file (YAML,
// docs/platforms.md) and `--set key=value` fill it; the topology generator (topology.h) turns it
// into a graph of devices and links; the builder (platform.h) instantiates SystemC modules.
//
// Units are in the field names: bandwidths in GB/s (1e9 bytes/s) per direction unless the name
// says gbit, latencies in ns, sizes in bytes, KiB or GiB.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "tlm/link_timing.h"

namespace tessera::platforms {

// One direction of one physical link (one NVLink, one PCIe x16 port, one network cable).
struct LinkSpec {
  double bandwidth_gb_per_s = 0.0;     // per direction
  double latency_ns = 0.0;             // propagation and PHY, one direction
  uint32_t packet_overhead_bytes = 0;  // header/CRC bytes per packet on the wire
  uint32_t max_packet_bytes = 0;       // payload bytes per packet (0: no packetization)

  // Timing of `lanes` such links bonded into one port group.
  protocol::LinkTiming timing(double lanes = 1.0) const;
};

// The NVLink fabric inside a node: every GPU has links to every NVSwitch (`links_per_switch[s]`
// NVLinks to switch s; they add up to the GPU's NVLink ports). switches = 0: no NVLink.
struct NvlinkFabric {
  int switches = 0;
  std::vector<int> links_per_switch;  // empty: the GPU's ports split evenly
  LinkSpec link;                      // one NVLink; bandwidth defaults to the GPU's per-port rate
  double switch_latency_ns = 100.0;   // crossbar pipeline per hop
  bool in_switch_reduction = false;   // NVLink SHARP (NVSwitch gen3)
  // A GPU stripes its packets over all its NVLinks, so every transfer uses every NVSwitch chip
  // at once: the chips are simulated as one crossbar whose ports bond all of a GPU's NVLinks
  // (false: one crossbar per chip, and each chunk takes one chip by ECMP).
  bool striped = true;
  // NVLink islands: the node's GPUs in `islands` consecutive groups, each with its own NVSwitches
  // (`switches` per island); GPUs of different islands reach each other through PCIe only.
  int islands = 1;
};

// The PCIe tree: `switches` PCIe switches, each with an equal share of the node's GPUs and NICs
// below it and one uplink to the host's root complex.
struct PcieTree {
  int switches = 1;
  LinkSpec link;                      // a GPU's or NIC's x16 port
  LinkSpec host_link;                 // switch to root complex
  double switch_latency_ns = 150.0;
  double root_complex_latency_ns = 300.0;  // peer-to-peer through the host
};

// Which arbiter decides a switch's output ports (docs/cosim.md): the egress port's own C++
// round-robin ("c++"), or an RTL block through its transactor: "rtl" (the built-in rr_arbiter),
// "rtl:NAME" (a block of the build), "rtl:PATH" (the block verilated from that Verilog file;
// the loader makes a relative path absolute against the platform file's folder, or the working
// directory for --set).
struct ArbiterSpec {
  std::string arbiter = "c++";
  std::vector<int> ports;    // the output ports the RTL block decides; empty: every port
  uint32_t flit_bytes = 16;  // the port's clock: one flit per cycle at its link's bandwidth
  bool rtl() const { return arbiter != "c++"; }
};

// A NIC: PCIe on one side, one network port on the other.
struct NicSpec {
  int count = 0;                      // per node
  double line_rate_gbit_per_s = 0.0;  // network port line rate (bits)
  uint32_t mtu_bytes = 4096;          // payload bytes per network packet
  uint32_t header_bytes = 64;         // per-packet headers and CRCs on the wire
  double message_overhead_ns = 0.0;   // per-message work queue processing
  double latency_ns = 0.0;            // NIC pipeline latency, one direction
  // An RTL rate limiter on the network port (docs/cosim.md): "none", or "rtl" (the built-in
  // token_bucket), "rtl:NAME", "rtl:PATH" as for an arbiter.
  std::string rate_limiter = "none";
  double rate_limit_gbit_per_s = 0.0;          // the rate it shapes to (wire bits)
  uint64_t rate_limit_burst_bytes = 1 << 20;   // its bucket
  uint32_t flit_bytes = 64;                    // the port's clock: one flit per cycle at line rate
  bool rate_limited() const { return rate_limiter != "none"; }
};

// The host: its memory hangs off the root complex (models/memory/host_memory.h).
struct HostSpec {
  double memory_gib = 2048.0;
  double memory_bandwidth_gb_per_s = 300.0;  // reads and writes together
  // Traffic crossing the root complex between PCIe ports is staged in host memory (a write
  // and a read per byte; false: peer to peer through the root complex).
  bool peer_through_memory = true;
};

struct NodeSpec {
  int gpus = 8;
  NvlinkFabric nvlink;
  PcieTree pcie;
  NicSpec nics;
  HostSpec host;
  ArbiterSpec nvswitch;  // the node's NVSwitches' output ports
};

enum class Topology {
  None,           // one node, or nodes without a scale-out network
  FatTree,        // `tiers` (2 or 3) levels of `radix`-port switches, `oversubscription`:1 at the leaves
  RailOptimized,  // NIC k of every node on rail leaf switch k; spines join the rails
  Torus,          // `torus_dims` switches in a 2D/3D torus, one per node
  Dragonfly,      // groups of all-to-all connected routers, global links between groups
  NvlinkNetwork,  // the nodes' NVSwitches uplink to a second tier of NVSwitches (one NVLink domain)
  LinkList,       // named switches and an explicit list of links
};
const char* topology_name(Topology t);
std::vector<std::string> topology_names();

struct ExplicitLink {
  std::string from, to;          // a switch name or "node<N>.nic<K>"
  double bandwidth_gb_per_s = 0.0;
  double latency_ns = 0.0;
  int line = 0;                  // line in the platform file, for errors
};

struct NetworkSpec {
  Topology topology = Topology::None;
  int tiers = 2;
  int radix = 64;
  double oversubscription = 1.0;   // leaf down : up bandwidth
  LinkSpec link;                   // every network link (NIC-switch and switch-switch)
  double switch_latency_ns = 200.0;
  uint64_t switch_buffer_bytes = 1 << 20;  // ingress buffer per switch port
  bool in_network_reduction = false;       // InfiniBand SHARP
  std::vector<int> torus_dims;
  int dragonfly_groups = 0;
  int dragonfly_routers_per_group = 0;
  int dragonfly_global_links_per_router = 0;
  std::vector<std::string> switches;  // LinkList
  std::vector<ExplicitLink> links;    // LinkList
  ArbiterSpec switch_arbiter = {"c++", {}, 64};  // the network switches' output ports
};

struct PlatformConfig {
  std::string name;
  std::string description;
  std::string source;              // the file it came from ("" for built-in defaults)
  models::GpuSpec gpu;
  int nodes = 1;
  NodeSpec node;
  NetworkSpec network;
  uint64_t gpu_buffer_bytes = 1 << 20;      // receive buffer per GPU port
  uint64_t switch_buffer_bytes = 1 << 20;   // ingress buffer per NVSwitch / PCIe switch port

  int gpu_count() const { return nodes * node.gpus; }
  // Some port is decided or shaped by an RTL block (which needs packet fidelity).
  bool uses_rtl() const { return node.nvswitch.rtl() || network.switch_arbiter.rtl() || node.nics.rate_limited(); }
  // NVLinks from one GPU to NVSwitch s (links_per_switch, or the even split).
  int nvlinks_to_switch(int s) const;
  // Checks every value; throws PlatformError naming the key.
  void validate() const;
};

// A bad platform value: `key` is the dotted path ("network.link.bandwidth_gb_per_s") that the
// platform file loader maps back to a file line.
class PlatformError : public std::invalid_argument {
 public:
  PlatformError(std::string key, const std::string& message)
      : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

}  // namespace tessera::platforms
