// Deterministic shortest-path routing with ECMP, computed once per platform.
//
// A transfer from GPU s (node sn) to GPU d (node dn) travels in up to three legs:
//  - same node: the node template's shortest path from s to d;
//  - else: from s to a gateway of its node (one of the gateways nearest to s; the source GPU
//    picks it and writes its index into the transfer), across the network to the gateway with
//    the same index in node dn (rail alignment), and from there to d.
// GPUs never forward (they are the ends of paths), and neither do gateways of other nodes.
// Path cost counts hops, a PCIe hop as four (NVLink is preferred where it reaches). Where
// several next hops are equally short, each is taken in proportion to its link's
// bandwidth (ECMP): inside a node by a hash of the transfer (flow, step, chunk), so that
// consecutive chunks take consecutive entries of the weighted list; in the network by the
// chunk's turn, its place among the chunks of its transfer that reached the device. A hash
// reused at every stage correlates the stages (the chunks that took gateway 0 of a list of
// 18 entries have hashes 0..4 mod 18 and reach only some of that gateway's 20 uplinks; those
// that took aggregation switch a of 32 reach core a mod 8 only): counting turns spreads every
// stage's chunks round-robin over its equal-cost ports.
//
// Tables scale with the platform's parts, not with GPUs x devices: the node template's table is
// shared by every node; network switches keep one entry per group of gateways that hang off
// the same switches (a key), plus the gateways cabled to themselves. A key's column of the
// network's table is built on the first route toward it: a run routes toward few of a large
// network's keys, and all of them cost keys x links (2,048 keys by 327,680 switch ports on
// 65,536 H100). So a Routing answers one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "platforms/topology.h"
#include "tlm/extensions.h"

namespace tessera::platforms {

// Weighted port lists, stored flat: list i is ports[begin[i] .. begin[i+1]).
struct PortLists {
  std::vector<uint32_t> begin{0};
  std::vector<uint16_t> ports;
  // Lists picked by turn (the network's): per entry, how many entries of its list lead to the
  // same next device, and how many of those come before it.
  std::vector<uint16_t> same_next, before;

  uint32_t add(const std::vector<uint16_t>& list);
  // A list picked by turn; `next[i]` is the device entry i leads to.
  uint32_t add(const std::vector<uint16_t>& list, const std::vector<uint32_t>& next);
  uint32_t size(uint32_t list) const { return begin[list + 1] - begin[list]; }
  uint16_t pick(uint32_t list, uint64_t hash) const {
    const uint32_t n = size(list);
    return ports[begin[list] + (n == 1 ? 0 : hash % n)];
  }
  // Picks entry `turn` mod n and makes `turn` the chunk's place among the chunks of its
  // transfer that take this list to the same next device: consecutive turns take consecutive
  // entries here, and those that meet again at the next device are consecutive there too.
  uint16_t pick_turn(uint32_t list, uint64_t& turn) const {
    const uint32_t n = size(list);
    const uint32_t i = begin[list] + (n == 1 ? 0 : static_cast<uint32_t>(turn % n));
    turn = turn / n * same_next[i] + before[i];
    return ports[i];
  }
  static constexpr uint32_t kNone = 0xffffffffu;
};

class Routing {
 public:
  // Throws PlatformError when some gateway cannot reach another (an unroutable network).
  explicit Routing(const PlatformGraph& topology);
  ~Routing();

  const PlatformGraph& topology() const { return topology_; }

  // The output port of node device `device` (template index) in `node` for transfer `t`.
  // Ports from node_ports(device) on are the gateway's uplinks. The source GPU's first call
  // also picks the gateway (t.gateway) for transfers that leave the node. A GPU sends
  // in-switch reduction and multicast chunks to one of its NVSwitches (by ECMP).
  uint32_t node_next(uint32_t node, uint32_t device, protocol::FabricTransfer& t) const;
  // Whether node_next's choice at `device` stays inside the node and writes nothing to `t`: an
  // in-switch chunk leaving its GPU, or a transfer to a GPU of `node` (but in-network reduction,
  // which climbs to its home gateway). Then node_port is node_next's choice.
  bool inside_node(uint32_t node, uint32_t device, const protocol::FabricTransfer& t) const;
  // Whether every choice of t's walk through `node` is inside it (t goes to a GPU of the node).
  bool stays_in_node(uint32_t node, const protocol::FabricTransfer& t) const;
  uint32_t node_port(uint32_t node, uint32_t device, const protocol::FabricTransfer& t) const;
  // The gateway (template index) a transfer that left its node by gateway t.gateway enters
  // the destination's node by: the same one (its rail) where that is among the destination
  // GPU's nearest gateways, else one of those (by the transfer's hash), across the rails. NCCL
  // keeps a ring's traffic off the CPU at both ends (NCCL_CROSS_NIC=2, the default, lets it
  // cross rails, as its PXN does by relaying through a GPU near the NIC): a transfer that
  // entered by its rail's NIC on another PCIe switch would cross the CPU's root complex. On a
  // network whose gateways of different indices cannot all reach each other (NVLink planes, a
  // link list with separate rails) it keeps its rail.
  uint32_t entry_gateway(const protocol::FabricTransfer& t) const;
  // The output port of network device `device` (a network switch) for transfer `t` (whose
  // turn it advances).
  uint32_t network_next(uint32_t device, protocol::FabricTransfer& t) const;

  // One link of a path: the one leaving `device` through `port`, a device of node `node`'s
  // template graph or (network) of the network graph.
  struct Step {
    bool network = false;
    uint32_t node = 0, device = 0, port = 0;
  };
  // Calls visit(step) for every link a transfer crosses from t.source to t.destination, in
  // order: the walk the switch modules make hop by hop. Throws std::logic_error for a route
  // that does not end.
  template <typename Visit>
  void walk(protocol::FabricTransfer t, Visit&& visit) const;

  // Consecutive chunks take consecutive entries of a weighted list, so a transfer's chunks
  // spread over equal-cost ports exactly in proportion to their bandwidth.
  static uint64_t hash(const protocol::FabricTransfer& t) { return t.chunk + uint64_t(t.step) * 7 + identity(t); }
  // In-switch reduction and multicast: every member's part of a chunk goes to the same NVSwitch
  // (its reduction unit sums what the members send it), as NVLS's multicast memory interleaves
  // addresses over a node's NVSwitches, whichever GPU writes them: the switch is picked by the
  // chunk, its step, its call's flow and its owner, never by the sending GPU.
  static uint64_t switch_hash(const protocol::FabricTransfer& t) {
    return t.chunk + uint64_t(t.step) * 7 + t.flow * 13 + uint64_t(t.destination) * 3;
  }
  // The transfer's own offset: its flow and, as addresses are in a real ECMP hash, its source
  // and destination, so that transfers of one collective step between different pairs spread
  // too (in flow fidelity a transfer is one flow and takes one path).
  static uint64_t identity(const protocol::FabricTransfer& t) {
    return t.flow * 13 + uint64_t(t.source) * 5 + uint64_t(t.destination) * 3;
  }
  // A source GPU picks its gateway by the chunk and its own place in the node, not the
  // transfer's identity: GPUs that share their nearest gateways start on different ones (a
  // transfer's chunks still take them in turn), as NCCL gives neighbouring GPUs different NICs.
  uint64_t gateway_hash(const protocol::FabricTransfer& t) const {
    return t.chunk + uint64_t(t.step) * 7 + t.source % topology_.node.gpus;
  }
  // The gateway a GPU (template index) sends in-network reduction chunks through: one of its
  // nearest, the GPUs that share a set of nearest gateways taking them in turn (as NCCL gives
  // each GPU its own NIC). Such chunks leave the gateway by its first uplink, where the
  // aggregation tree starts (platforms/aggregation.h). -1: the node has no way out.
  int32_t home_gateway(uint32_t gpu) const { return home_gateway_[gpu]; }
  // Whether GPU `to` (template index) leaves its node as GPU `from` does, `shift` gateways on:
  // its list of nearest gateways is `from`'s, each entry plus `shift`, and the gateway hash picks
  // corresponding entries for both (their places differ by a multiple of the list's length), so
  // that every transfer of `to` leaves and enters by the gateways of `from`'s shifted, none of
  // them `from`'s own (a node's rails alike: SymmetricRun's rail images).
  bool leaves_as(uint32_t from, uint32_t to, uint32_t shift) const;

  // Flow fidelity's network leg: a transfer from network gateway `from` to gateway `to` spreads
  // over every equal-cost port, as packet fidelity's chunks do turn by turn: each entry of a
  // device's weighted list takes an equal share of what reaches the device. `out` gets every
  // network link crossed, once, as (device, port, share of the transfer's bytes); the shares
  // leaving each stage add up to one. Throws std::logic_error for a route that does not end.
  struct Share {
    uint32_t device = 0, port = 0;
    double share = 0.0;
  };
  struct SpreadScratch {  // kept by the caller so that a spread allocates nothing once warm
    std::vector<std::pair<uint32_t, double>> wave, next;
    std::vector<uint32_t> slot;  // by network device: its place in `next`, or kNone
  };
  void network_spread(uint32_t from, uint32_t to, std::vector<Share>& out, SpreadScratch& scratch) const;
  // The same inside the node template: from device `from` to node target `target` (a GPU, or
  // the GPU count plus a gateway index), over the node's tables (empty where `from` is the
  // target). The spread is the same in every node.
  void node_spread(uint32_t from, uint32_t target, std::vector<Share>& out, SpreadScratch& scratch) const;
  uint32_t node_targets() const { return node_targets_; }

  // What may cross each directed link of the node template (by Graph::directed_link), over
  // every choice the tables offer: kBetweenGpus, traffic between two
  // GPUs of the node (in-switch reduction and multicast included); kThroughGateways, traffic
  // leaving or entering the node. GPUs and gateways never forward other nodes' traffic, so
  // nothing else crosses a node's links.
  static constexpr uint8_t kBetweenGpus = 1, kThroughGateways = 2;
  std::vector<uint8_t> node_link_use() const;

  // Flow fidelity: the network's links between switches that no allocation can fill, whatever
  // the traffic, because the gateways cannot send or receive enough of what crosses them
  // (platforms/link_bounds.cpp, docs/fidelity.md "Links that cannot fill"). By the network
  // graph's directed link (Graph::directed_link); empty where the bound does not apply:
  // in-network reduction (its flows cross switches outside any spread), network links that
  // frame packets differently, or a route that does not end.
  std::vector<bool> links_that_cannot_fill(bool in_network_reduction) const;
  // The routing key of network gateway `gateway`: gateways of one key (hanging off the same
  // switches) are routed to alike everywhere but on their own links.
  uint32_t destination_key(uint32_t gateway) const { return key_of_[gateway]; }
  uint32_t keys() const { return keys_; }
  // Entries the network's columns hold so far: their blocks' lists and the columns' blocks.
  size_t column_entries() const;

  // Finds every key's hops at once (platforms/every_key_hops.h) for the columns built from then
  // on: for a caller that routes toward every key (the bound on links that cannot fill). The
  // columns are the same as key by key, each built on first use as before. False where they
  // are still searched key by key: a ruled network (torus, dragonfly), a gateway with several
  // uplinks, a switch of more than 64 ports.
  bool prepare_every_column() const;

 private:
  // The port of `device`'s list toward `target` (a GPU, or nt.gpus + a gateway) that t's hash picks.
  uint32_t node_pick(uint32_t node, uint32_t device, uint32_t target, const protocol::FabricTransfer& t) const;
  uint32_t node_target(uint32_t node, const protocol::FabricTransfer& t) const;
  uint32_t gateway_uplink(uint32_t gateway_device, uint32_t destination_gateway, uint64_t& turn) const;
  // The weighted list of gateway `gateway`'s uplinks toward gateway `destination` (kNone: it
  // has one uplink); of network switch `device`'s ports toward it.
  uint32_t uplink_list(uint32_t gateway, uint32_t destination) const;
  uint32_t switch_list(uint32_t device, uint32_t destination) const;  // throws where there is no route
  uint32_t switch_list_or_none(uint32_t device, uint32_t destination) const;
  // The chunk's turn at gateway `gateway` of its source node: its place among the chunks of
  // its transfer that the source GPU sent there (hash `h` picked the gateway).
  uint64_t gateway_turn(const protocol::FabricTransfer& t, uint64_t h) const;
  void build_node_tables();
  // Marks `use` on every directed node link of every route from `from` to node target `target`.
  void mark_routes(uint32_t from, uint32_t target, uint8_t use, std::vector<uint8_t>& links) const;
  void build_network_tables();
  // The spread of one source toward every key at once (platforms/link_bounds.cpp).
  class SpreadToEveryKey;

  const PlatformGraph& topology_;
  uint32_t node_targets_ = 0;      // GPUs, then gateways
  PortLists node_lists_;
  std::vector<uint32_t> node_table_;     // device * node_targets_ + target -> list
  std::vector<uint32_t> gateway_choice_; // per GPU: list of gateway indices (into node_lists_), its share
  std::vector<uint32_t> entry_choice_;   // per GPU: all its nearest gateways (arrivals enter by one)
  std::vector<bool> entry_gateways_;     // GPU * gateways + g: g is one of the GPU's nearest
  std::vector<int32_t> home_gateway_;    // per GPU: its in-network reduction gateway, or -1
  std::vector<std::pair<uint16_t, uint16_t>> gateway_entries_;  // GPU * gateways + g: g's entries
                                                               // in the list (first, count)
  bool rails_joined_ = true;  // every gateway reaches every other (entry_gateway may change rails)
  std::vector<int32_t> gateway_index_;   // template device -> gateway index, or -1
  std::vector<uint32_t> nvswitch_ports_; // per GPU: its NVLink ports (in-switch reduction)

  // The network's next hops toward each key, a column per key built on the first route toward
  // it (so a Routing is not for lookups from several threads at once).
  // A column's lists per switch are stored in blocks of kColumnBlock switches, each block once
  // (NetworkColumns::blocks): toward most keys a switch takes the same list (its uplinks), so
  // most of one key's blocks are another's (2,048 keys by 5,120 switches on 65,536 H100: 42 MB
  // as plain columns).
  static constexpr uint32_t kColumnBlock = 64;
  struct NetworkColumns;
  struct KeyColumn {  // per block of switches (minus the gateways), then per multi-uplink gateway: its list
    std::vector<uint32_t> switch_blocks, uplinks;
    bool built = false;
  };
  void check_connected();
  const KeyColumn& column(uint32_t key) const;
  // The list of switch `s` (network device gateways + s) in column `c`.
  uint32_t switch_entry(const KeyColumn& c, uint32_t s) const;
  static void store_blocks(NetworkColumns& n, KeyColumn& c);
  mutable PortLists net_lists_;
  uint32_t keys_ = 0;
  std::vector<uint32_t> key_of_;         // global gateway -> key (the set of switches it hangs off)
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> direct_;  // per switch: (gateway, list)
  std::vector<uint32_t> uplink_table_;   // per gateway with several uplinks: its row in a column
  std::unique_ptr<NetworkColumns> network_;
};

// A platform's graph and its routes, generated once and shared: the command line checks a
// platform with them before a run (an unroutable network is a bad input), and the builder
// instantiates its modules from the same object instead of generating and routing again.
struct RoutedTopology {
  // Throws PlatformError for a platform that cannot be built or routed.
  explicit RoutedTopology(const PlatformConfig& config)
      : graph(generate_topology(config)), routing(graph) {}
  RoutedTopology(const RoutedTopology&) = delete;
  RoutedTopology& operator=(const RoutedTopology&) = delete;

  const PlatformGraph graph;
  const Routing routing;  // refers to `graph`
};

template <typename Visit>
void Routing::walk(protocol::FabricTransfer t, Visit&& visit) const {
  const NodeTemplate& nt = topology_.node;
  const Graph& ng = nt.graph;
  const Graph& net = topology_.network.graph;
  const uint32_t gateways = topology_.network.gateways;
  const uint32_t per_node = topology_.gateways_per_node();
  uint32_t node = t.source / nt.gpus, v = t.source % nt.gpus, x = 0;
  bool in_node = true;
  auto enter_node = [&](uint32_t gateway) {  // a network gateway: its node's device
    node = gateway / per_node;
    v = nt.gateways[gateway % per_node];
    in_node = true;
  };
  const size_t limit = 4 * (ng.devices.size() + net.devices.size()) + 16;
  for (size_t hops = 0; hops <= limit; ++hops) {
    if (in_node) {
      // Only a GPU is a destination (template devices past the GPUs have indices too).
      if (v < nt.gpus && node * nt.gpus + v == t.destination) return;
      const uint32_t port = node_next(node, v, t);
      if (port < ng.ports(v)) {
        visit(Step{false, node, v, port});
        v = ng.neighbor(v, port);
        continue;
      }
      const uint32_t gw = static_cast<uint32_t>(
          std::find(nt.gateways.begin(), nt.gateways.end(), v) - nt.gateways.begin());
      x = node * per_node + gw;
      visit(Step{true, node, x, port - ng.ports(v)});
      x = net.neighbor(x, port - ng.ports(v));
      in_node = false;
      if (x < gateways) enter_node(x);  // gateways cabled to each other
      continue;
    }
    const uint32_t port = network_next(x, t);
    visit(Step{true, node, x, port});
    x = net.neighbor(x, port);
    if (x < gateways) enter_node(x);
  }
  throw std::logic_error("the route from GPU " + std::to_string(t.source) + " to GPU " +
                         std::to_string(t.destination) + " does not end");
}

}  // namespace tessera::platforms
