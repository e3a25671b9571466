// The platform as a graph: devices (GPUs, NVSwitches, PCIe switches, the host's root complex,
// NICs, network switches) and the links between them, generated from a PlatformConfig.
//
// Every node of a platform is the same, so the graph is kept in two parts that scale:
//  - the node template: the devices and links inside one node (GPUs are its devices 0..G-1);
//    some of its devices are gateways (NICs, or the NVSwitches of an NVLink network) whose
//    uplinks attach the node to the network;
//  - the network: the network switches, the links between them, and the attachments of every
//    node's gateway uplinks to switch ports.
// Gateway g of node n has the global gateway id n * gateways_per_node + g.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "platforms/platform_config.h"
#include "tlm/link_timing.h"

namespace tessera::platforms {

enum class DeviceKind : uint8_t { Gpu, NvSwitch, PcieSwitch, RootComplex, Nic, NetworkSwitch };
const char* device_kind_name(DeviceKind kind);

enum class LinkKind : uint8_t { Nvlink, Pcie, Network };
const char* link_kind_name(LinkKind kind);

// One physical link (both directions share the timing; each direction is its own wire).
struct GraphLink {
  uint32_t a = 0, b = 0;            // devices
  uint32_t a_port = 0, b_port = 0;  // their port numbers
  LinkKind kind = LinkKind::Nvlink;
  protocol::LinkTiming timing;      // per direction (all its lanes)
  uint32_t lanes = 1;               // physical links bonded into this one: ports at each end
};

struct GraphDevice {
  DeviceKind kind = DeviceKind::Gpu;
  std::string name;
  double latency_ns = 0.0;           // pipeline latency of a hop through the device
  uint32_t chips = 1;                // physical switch chips it stands for (striped NVSwitches)
  std::vector<uint32_t> port_links;  // port -> link
};

// Devices and links; ports are numbered per device in the order its links were added.
struct Graph {
  std::vector<GraphDevice> devices;
  std::vector<GraphLink> links;

  uint32_t add_device(DeviceKind kind, std::string name, double latency_ns);
  uint32_t connect(uint32_t a, uint32_t b, LinkKind kind, const protocol::LinkTiming& timing,
                   uint32_t lanes = 1);
  // Physical ports of `device`: the lanes of its links.
  uint32_t physical_ports(uint32_t device) const;
  // The device at the other end of `device`'s `port`.
  uint32_t neighbor(uint32_t device, uint32_t port) const;
  // The direction of the link at `device`'s `port` that leaves through it: 2 x link + 0 from the
  // link's end a, + 1 from its end b.
  uint32_t directed_link(uint32_t device, uint32_t port) const;
  uint32_t ports(uint32_t device) const {
    return static_cast<uint32_t>(devices[device].port_links.size());
  }
};

struct NodeTemplate {
  Graph graph;                         // GPUs are devices 0..gpus-1
  uint32_t gpus = 0;
  std::vector<uint32_t> gateways;      // devices that attach to the network, in gateway order
  std::vector<uint32_t> uplinks;       // per gateway: network ports, numbered after its node ports
  protocol::LinkTiming uplink_timing;  // one gateway uplink
};

// The scale-out network. Its first devices are the gateways of every node (device d is global
// gateway d; its ports are the gateway's uplinks, in order); the network switches follow.
struct Network {
  Graph graph;
  uint32_t gateways = 0;  // devices 0..gateways-1
  // A torus: its dimensions; switch s (device gateways + s) sits at coordinates s mod dims[0],
  // (s / dims[0]) mod dims[1], ... Empty for every other topology.
  std::vector<int> torus_dims;
  // A dragonfly: routers per group; switch s is router s mod a of group s / a. 0 otherwise.
  uint32_t dragonfly_routers_per_group = 0;
  uint32_t switches() const { return static_cast<uint32_t>(graph.devices.size()) - gateways; }
  // Torus: the dimension in which switches a and b (switch indices) differ first, -1 if equal.
  int first_differing_dimension(uint32_t a, uint32_t b) const;
  // Dragonfly: the group of switch s (a switch index).
  uint32_t dragonfly_group(uint32_t s) const { return s / dragonfly_routers_per_group; }
};

struct PlatformGraph {
  NodeTemplate node;
  Network network;
  uint32_t nodes = 1;
  uint32_t gateways_per_node() const { return static_cast<uint32_t>(node.gateways.size()); }
  uint32_t gpu_count() const { return nodes * node.gpus; }
};

// Timing of a NIC's network port: line rate, MTU packets with their headers, cable latency.
protocol::LinkTiming nic_link_timing(const PlatformConfig& config);

// Builds the graph. Throws PlatformError (naming the key) for what cannot be built.
PlatformGraph generate_topology(const PlatformConfig& config);

}  // namespace tessera::platforms
