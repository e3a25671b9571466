// The platform's routes as the flow fabric sees them (flow fidelity, docs/fidelity.md): every
// link of the generated topology, one id per direction, and the path of a transfer from the
// same routing tables the switch modules use in packet mode: in a node the same ECMP hash, across
// the network every equal-cost port at once (each link with its share of the bytes).
//
// Link ids: link l of node n's template, direction a -> b is 2 (n L + l), b -> a one more
// (L: links per node); then link l of the network graph, 2 (nodes L + l) and one more.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/flow/flow_fabric.h"
#include "platforms/keyed_table.h"
#include "platforms/leg_pieces.h"
#include "platforms/routing.h"
#include "platforms/topology.h"

namespace tessera::platforms {

class RoutedPaths : public models::PathProvider {
 public:
  // `nic_message_overhead`: the NIC's work-request processing, charged once per flow that
  // leaves a node (packet mode charges it per chunk on the NIC's network port).
  // `max_leg_entries`: what the kept network legs may hold at most (LegPieces::entries); past
  // it, legs are spread again for each transfer.
  static constexpr size_t kMaxLegEntries = size_t(1) << 24;  // 16 M: 192 MiB of links and shares
  RoutedPaths(const PlatformGraph& topology, const Routing& routing,
              sc_core::sc_time nic_message_overhead, size_t max_leg_entries = kMaxLegEntries);

  uint32_t links() const override { return links_; }
  models::FlowLink link(uint32_t id) const override;
  void path(const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
            std::vector<double>& shares) const override;
  uint32_t path_with_leg(const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
                         std::vector<double>& shares) const override;
  Leg leg(uint32_t id) const override;

  // Switches that reduce (NVSwitches, network switches), by device: node n's device v is
  // n D + v (D: devices per node), network device x is nodes D + x.
  uint32_t switches() const override { return switch_ids_; }
  uint32_t path_to_switch(const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const override;
  void path_from_switch(uint32_t from, const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const override;
  uint32_t tree_device(uint32_t id) const override;
  uint32_t tree_hop(uint32_t from, uint32_t port, const protocol::FabricTransfer& t,
                    std::vector<uint32_t>& links) const override;

  // The links no allocation can fill, by link id: the network's (Routing::links_that_cannot_fill)
  // and the nodes' links into and out of gateways in series with a network link that fills
  // first (gateway_links_in_series); empty where neither applies.
  std::vector<bool> links_that_cannot_fill(bool in_network_reduction) const;

  // The same names and kinds packet mode gives the link's module.
  std::string name(uint32_t id) const;
  LinkKind kind(uint32_t id) const { return graph_link(id).kind; }
  // Node `node`'s directed link `template_link` (the index of Routing::node_link_use).
  uint32_t node_link_id(uint32_t node, uint32_t template_link) const { return 2 * node * node_links_ + template_link; }

 private:
  const GraphLink& graph_link(uint32_t id) const;
  bool gateway_links_in_series(std::vector<bool>& out) const;
  // The directed link leaving `device` through `port` in the node graph (of node `node`) or
  // the network graph.
  uint32_t node_link(uint32_t node, uint32_t device, uint32_t port) const;
  uint32_t network_link(uint32_t device, uint32_t port) const;
  // Appends the links from device `device` of node `node` toward GPU t.destination, as far as
  // the node goes: true where it reached the GPU, false at the gateway it leaves by (the
  // source GPU's first hop writes t.gateway).
  bool node_leg(uint32_t node, uint32_t device, protocol::FabricTransfer& t, std::vector<uint32_t>& links) const;
  // The path's links up to its network leg (true: it is all in the node), and the leg's ends:
  // from the source's gateway `from` to the destination's `to`, in node `there`, entered by
  // gateway index `entry`; network_leg fills `head` and `tail`.
  struct Ends {
    uint32_t from = 0, to = 0, there = 0, entry = 0;
    uint32_t head = kNoLink, tail = kNoLink;  // the gateways' links, where the leg leaves them out
  };
  static constexpr uint32_t kNoLink = ~0u;
  bool to_network(protocol::FabricTransfer& t, std::vector<uint32_t>& links, std::vector<double>& shares,
                  Ends& ends) const;
  uint32_t assemble(const protocol::FabricTransfer& t, std::vector<uint32_t>& links, std::vector<double>& shares,
                    bool name_kept) const;
  // A node's part of a path from template device `from` to node target `target`, spread over
  // its equal-cost ports: template links and shares at [first, first + count) of spread_links_
  // and spread_shares_, spread once per (device, target).
  struct NodeSpread {
    uint32_t first = 0, count = 0;
    bool known = false;
  };
  const NodeSpread& node_spread(uint32_t from, uint32_t target) const;
  void append_node_spread(uint32_t node, uint32_t from, uint32_t target, std::vector<uint32_t>& links,
                          std::vector<double>& shares) const;
  mutable std::vector<NodeSpread> node_spreads_;  // by from x node targets + target
  mutable std::vector<uint32_t> spread_links_;    // template directed links
  mutable std::vector<double> spread_shares_;
  // The same to a GPU that is in the node.
  void into_node(uint32_t node, uint32_t device, const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const;
  template <typename Next>
  bool walk_in_node(uint32_t node, uint32_t v, const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
                    Next&& next) const;
  template <typename Next>
  uint32_t walk_to_switch(const protocol::FabricTransfer& t, std::vector<uint32_t>& links, Next&& next) const;
  // The switch id of network device `x` (a switch), or of the device past the gateways.
  uint32_t network_switch(uint32_t x) const;

  const PlatformGraph& topology_;
  const Routing& routing_;
  sc_core::sc_time nic_overhead_;
  uint32_t node_links_ = 0;  // links per node (one direction)
  uint32_t links_ = 0;       // directed links in all
  uint32_t node_devices_ = 0;  // devices per node (template)
  uint32_t switch_ids_ = 0;
  // The network legs spread so far, by pair of gateways or of gateway classes (network_leg):
  // their links and shares in pieces_, or, for the leg just spread and not kept, in
  // fresh_links_ and fresh_shares_ (the leg spread last).
  struct NetworkLeg {
    LegPieces::List list;
    uint32_t id = kNoLeg;  // its place in kept_, where it is kept
  };
  size_t max_leg_entries_;
  NetworkLeg network_leg(Ends& ends) const;
  void list_leg(const NetworkLeg& leg, const Ends& ends, std::vector<uint32_t>& links, std::vector<double>& shares) const;
  mutable KeyedTable<NetworkLeg> legs_;
  mutable std::vector<NetworkLeg> kept_;  // by id
  // By network gateway, where it has one link to a switch: that link out and in, and the switch.
  struct OneLink {
    uint32_t out = kNoLink, in = kNoLink, to = 0;
  };
  std::vector<OneLink> one_link_;
  mutable LegPieces pieces_;
  mutable std::vector<uint32_t> fresh_links_;
  mutable std::vector<double> fresh_shares_;
  mutable std::vector<Routing::Share> spread_;  // scratch of network_leg()
  mutable Routing::SpreadScratch scratch_;
};

}  // namespace tessera::platforms
