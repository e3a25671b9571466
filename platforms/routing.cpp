#include "platforms/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <map>
#include <numeric>
#include <stdexcept>

namespace tessera::platforms {

namespace {

constexpr uint32_t kFar = 0xffffffffu;
using Frontier = std::priority_queue<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>,
                                     std::greater<std::pair<uint32_t, uint32_t>>>;

// Ports in proportion to their bandwidth (ECMP weights), in port order.
std::vector<uint16_t> weighted(const std::vector<std::pair<uint16_t, double>>& choices) {
  std::vector<uint16_t> out;
  if (choices.empty()) return out;
  double least = choices[0].second;
  for (const auto& c : choices) least = std::min(least, c.second);
  std::vector<uint32_t> weight;
  for (const auto& c : choices)
    weight.push_back(static_cast<uint32_t>(std::lround(c.second / least * 4.0)));
  uint32_t g = 0;
  for (uint32_t w : weight) g = std::gcd(g, w);
  for (size_t i = 0; i < choices.size(); ++i)
    out.insert(out.end(), weight[i] / g, choices[i].first);
  return out;
}

// Hop cost: a PCIe hop counts as four, so peer-to-peer traffic takes NVLink wherever NVLink
// reaches and crosses PCIe only where it must (to a NIC, or on a platform without NVLink).
uint32_t cost(const Graph& g, uint32_t device, uint32_t port) {
  return g.links[g.devices[device].port_links[port]].kind == LinkKind::Pcie ? 4 : 1;
}

// Least-cost distances from `sources` over `graph`; `transit(d)` says whether paths may pass
// through device d (sources always expand).
template <typename Transit>
void distances(const Graph& graph, const std::vector<uint32_t>& sources, Transit transit,
               std::vector<uint32_t>& dist, Frontier& queue) {
  dist.assign(graph.devices.size(), kFar);
  queue = Frontier();
  for (uint32_t s : sources) {
    dist[s] = 0;
    queue.push({0, s});
  }
  while (!queue.empty()) {
    const auto [d, u] = queue.top();
    queue.pop();
    if (d != dist[u] || (d != 0 && !transit(u))) continue;
    for (uint32_t p = 0; p < graph.ports(u); ++p) {
      const uint32_t w = graph.neighbor(u, p);
      const uint32_t via = d + cost(graph, u, p);
      if (via < dist[w]) {
        dist[w] = via;
        queue.push({via, w});
      }
    }
  }
}

double bandwidth(const Graph& g, uint32_t device, uint32_t port) {
  return g.links[g.devices[device].port_links[port]].timing.bandwidth_bytes_per_s;
}

}  // namespace

uint32_t PortLists::add(const std::vector<uint16_t>& list) {
  if (list.empty()) return kNone;
  ports.insert(ports.end(), list.begin(), list.end());
  begin.push_back(static_cast<uint32_t>(ports.size()));
  return static_cast<uint32_t>(begin.size() - 2);
}

Routing::Routing(const PlatformGraph& topology) : topology_(topology) {
  build_node_tables();
  build_network_tables();
}

void Routing::build_node_tables() {
  const NodeTemplate& nt = topology_.node;
  const Graph& g = nt.graph;
  const uint32_t devices = static_cast<uint32_t>(g.devices.size());
  const uint32_t gateways = static_cast<uint32_t>(nt.gateways.size());
  node_targets_ = nt.gpus + gateways;
  node_table_.assign(size_t(devices) * node_targets_, PortLists::kNone);
  gateway_index_.assign(devices, -1);
  for (uint32_t i = 0; i < gateways; ++i) gateway_index_[nt.gateways[i]] = static_cast<int32_t>(i);

  std::vector<uint32_t> dist;
  Frontier queue;
  std::vector<std::vector<uint32_t>> to_target(node_targets_);
  for (uint32_t target = 0; target < node_targets_; ++target) {
    const uint32_t device = target < nt.gpus ? target : nt.gateways[target - nt.gpus];
    distances(g, {device}, [&](uint32_t d) { return d >= nt.gpus; }, dist, queue);
    to_target[target] = dist;
    for (uint32_t v = 0; v < devices; ++v) {
      if (v == device || dist[v] == kFar) continue;
      std::vector<std::pair<uint16_t, double>> choices;
      for (uint32_t p = 0; p < g.ports(v); ++p) {
        const uint32_t w = g.neighbor(v, p);
        if (dist[w] != kFar && dist[w] + cost(g, v, p) == dist[v] && (w == device || w >= nt.gpus))
          choices.emplace_back(static_cast<uint16_t>(p), bandwidth(g, v, p));
      }
      node_table_[size_t(v) * node_targets_ + target] = node_lists_.add(weighted(choices));
    }
  }
  // In-switch reduction: a GPU's NVLink ports, in proportion to their bandwidth.
  nvswitch_ports_.assign(nt.gpus, PortLists::kNone);
  for (uint32_t i = 0; i < nt.gpus; ++i) {
    std::vector<std::pair<uint16_t, double>> choices;
    for (uint32_t p = 0; p < g.ports(i); ++p)
      if (g.devices[g.neighbor(i, p)].kind == DeviceKind::NvSwitch)
        choices.emplace_back(static_cast<uint16_t>(p), bandwidth(g, i, p));
    nvswitch_ports_[i] = node_lists_.add(weighted(choices));
  }
  // Each GPU leaves its node through its nearest gateways, in proportion to its first hop.
  gateway_choice_.assign(nt.gpus, PortLists::kNone);
  for (uint32_t i = 0; i < nt.gpus && gateways > 0; ++i) {
    uint32_t nearest = kFar;
    for (uint32_t gw = 0; gw < gateways; ++gw) nearest = std::min(nearest, to_target[nt.gpus + gw][i]);
    std::vector<std::pair<uint16_t, double>> choices;
    for (uint32_t gw = 0; gw < gateways && nearest != kFar; ++gw) {
      if (to_target[nt.gpus + gw][i] != nearest) continue;
      const uint32_t list = node_table_[size_t(i) * node_targets_ + nt.gpus + gw];
      double bw = 0;
      for (uint32_t k = 0; k < node_lists_.size(list); ++k)
        bw += bandwidth(g, i, node_lists_.ports[node_lists_.begin[list] + k]);
      choices.emplace_back(static_cast<uint16_t>(gw), bw);
    }
    gateway_choice_[i] = node_lists_.add(weighted(choices));
  }
  // Home gateways: the GPUs with the same nearest gateways take them in turn.
  home_gateway_.assign(nt.gpus, -1);
  std::map<std::vector<uint16_t>, uint32_t> sharing;  // nearest set -> GPUs seen with it
  for (uint32_t i = 0; i < nt.gpus && gateways > 0; ++i) {
    const uint32_t list = gateway_choice_[i];
    if (list == PortLists::kNone) continue;
    std::vector<uint16_t> nearest(node_lists_.ports.begin() + node_lists_.begin[list],
                                  node_lists_.ports.begin() + node_lists_.begin[list + 1]);
    nearest.erase(std::unique(nearest.begin(), nearest.end()), nearest.end());
    home_gateway_[i] = nearest[sharing[nearest]++ % nearest.size()];
  }
}

void Routing::build_network_tables() {
  const Network& net = topology_.network;
  const Graph& g = net.graph;
  const uint32_t gws = net.gateways;
  const uint32_t switches = net.switches();
  if (gws == 0) return;

  // Gateways hanging off the same set of switches share one table column (a key).
  std::map<std::vector<uint32_t>, uint32_t> keys;
  std::vector<std::vector<uint32_t>> key_switches;
  key_of_.resize(gws);
  for (uint32_t d = 0; d < gws; ++d) {
    std::vector<uint32_t> set;
    for (uint32_t p = 0; p < g.ports(d); ++p) set.push_back(g.neighbor(d, p));
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    if (set.empty())
      throw PlatformError(topology_.nodes > 1 ? "network.links" : "network",
                          g.devices[d].name + " is not cabled to the network");
    auto [it, fresh] = keys.emplace(set, static_cast<uint32_t>(keys.size()));
    if (fresh) key_switches.push_back(set);
    key_of_[d] = it->second;
  }
  keys_ = static_cast<uint32_t>(key_switches.size());
  // Transfers keep their gateway index across the network (rail alignment), so a key's
  // switches need to reach only the keys holding gateways of the same index: the planes of an
  // NVLink network are separate networks.
  const uint32_t per_node = topology_.gateways_per_node();
  std::vector<std::vector<bool>> key_indices(keys_, std::vector<bool>(per_node, false));
  for (uint32_t d = 0; d < gws; ++d) key_indices[key_of_[d]][d % per_node] = true;
  auto share_an_index = [&](uint32_t a, uint32_t b) {
    for (uint32_t i = 0; i < per_node; ++i)
      if (key_indices[a][i] && key_indices[b][i]) return true;
    return false;
  };

  direct_.assign(switches, {});
  for (uint32_t x = gws; x < g.devices.size(); ++x) {
    std::map<uint32_t, std::vector<std::pair<uint16_t, double>>> to_gateway;
    for (uint32_t p = 0; p < g.ports(x); ++p) {
      const uint32_t w = g.neighbor(x, p);
      if (w < gws) to_gateway[w].emplace_back(static_cast<uint16_t>(p), bandwidth(g, x, p));
    }
    for (const auto& [w, choices] : to_gateway)
      direct_[x - gws].emplace_back(w, net_lists_.add(weighted(choices)));
  }

  uplink_table_.assign(gws, PortLists::kNone);
  uint32_t rows = 0;
  for (uint32_t d = 0; d < gws; ++d)
    if (g.ports(d) > 1) uplink_table_[d] = rows++;
  uplink_rows_.assign(size_t(rows) * keys_, PortLists::kNone);
  switch_table_.assign(size_t(switches) * keys_, PortLists::kNone);

  std::vector<uint32_t> dist;
  Frontier queue;
  for (uint32_t k = 0; k < keys_; ++k) {
    distances(g, key_switches[k], [&](uint32_t d) { return d >= gws; }, dist, queue);
    for (uint32_t other = 0; other < keys_; ++other)
      for (uint32_t x : key_switches[other])
        if (dist[x] == kFar && share_an_index(k, other))
          throw PlatformError(
              topology_.nodes > 1 && !net.graph.devices.empty() ? "network.links" : "network",
              "the network is not connected: " + g.devices[x].name + " cannot reach " +
                  g.devices[key_switches[k][0]].name);
    for (uint32_t x = gws; x < g.devices.size(); ++x) {
      if (dist[x] == 0 || dist[x] == kFar) continue;
      std::vector<std::pair<uint16_t, double>> choices;
      for (uint32_t p = 0; p < g.ports(x); ++p) {
        const uint32_t w = g.neighbor(x, p);
        if (w >= gws && dist[w] != kFar && dist[w] + cost(g, x, p) == dist[x])
          choices.emplace_back(static_cast<uint16_t>(p), bandwidth(g, x, p));
      }
      switch_table_[size_t(x - gws) * keys_ + k] = net_lists_.add(weighted(choices));
    }
    for (uint32_t d = 0; d < gws; ++d) {
      if (uplink_table_[d] == PortLists::kNone) continue;
      uint32_t nearest = kFar;
      for (uint32_t p = 0; p < g.ports(d); ++p) nearest = std::min(nearest, dist[g.neighbor(d, p)]);
      std::vector<std::pair<uint16_t, double>> choices;
      for (uint32_t p = 0; p < g.ports(d); ++p)
        if (dist[g.neighbor(d, p)] == nearest)
          choices.emplace_back(static_cast<uint16_t>(p), bandwidth(g, d, p));
      uplink_rows_[size_t(uplink_table_[d]) * keys_ + k] = net_lists_.add(weighted(choices));
    }
  }
}

uint32_t Routing::node_next(uint32_t node, uint32_t device, protocol::FabricTransfer& t) const {
  const NodeTemplate& nt = topology_.node;
  const uint64_t h = hash(t);
  if (device < nt.gpus && (t.purpose == protocol::TransferPurpose::SwitchReduce ||
                           t.purpose == protocol::TransferPurpose::SwitchMulticast)) {
    if (nvswitch_ports_[device] == PortLists::kNone)
      throw std::runtime_error("GPU " + std::to_string(node * nt.gpus + device) +
                               " has no NVSwitch for in-switch reduction");
    return node_lists_.pick(nvswitch_ports_[device], h);
  }
  uint32_t target;
  if (t.purpose == protocol::TransferPurpose::NetworkReduce) {
    // To the GPU's home gateway, then up its first uplink into the aggregation tree.
    if (device < nt.gpus) {
      if (home_gateway_[device] < 0)
        throw std::runtime_error("GPU " + std::to_string(node * nt.gpus + device) +
                                 " has no network port for in-network reduction");
      t.gateway = static_cast<uint32_t>(home_gateway_[device]);
    }
    if (gateway_index_[device] == static_cast<int32_t>(t.gateway)) return nt.graph.ports(device);
    target = nt.gpus + t.gateway;
  } else if (t.destination / nt.gpus == node) {
    target = t.destination % nt.gpus;
  } else {
    if (device < nt.gpus && t.source == node * nt.gpus + device) {
      const uint32_t choice = gateway_choice_[device];
      if (choice == PortLists::kNone)
        throw std::runtime_error("GPU " + std::to_string(t.source) + " has no way out of its node to GPU " +
                                 std::to_string(t.destination));
      // The GPU's own offset, not the transfer's identity: GPUs that share their nearest
      // gateways start on different ones (a transfer's chunks still take them in turn), as
      // NCCL gives neighbouring GPUs different NICs.
      t.gateway = node_lists_.pick(choice, t.chunk + uint64_t(t.step) * 7 + device);
    }
    if (gateway_index_[device] == static_cast<int32_t>(t.gateway)) {
      const uint32_t per_node = topology_.gateways_per_node();
      const uint32_t here = node * per_node + t.gateway;
      const uint32_t there = (t.destination / nt.gpus) * per_node + t.gateway;
      return nt.graph.ports(device) + gateway_uplink(here, there, h);
    }
    target = nt.gpus + t.gateway;
  }
  const uint32_t list = node_table_[size_t(device) * node_targets_ + target];
  if (list == PortLists::kNone)
    throw std::runtime_error("no route from " + nt.graph.devices[device].name + " of node " +
                             std::to_string(node) + " to GPU " + std::to_string(t.destination));
  return node_lists_.pick(list, h);
}

uint32_t Routing::gateway_uplink(uint32_t gateway, uint32_t destination, uint64_t h) const {
  const uint32_t row = uplink_table_[gateway];
  if (row == PortLists::kNone) return 0;
  return net_lists_.pick(uplink_rows_[size_t(row) * keys_ + key_of_[destination]], h);
}

uint32_t Routing::network_next(uint32_t device, const protocol::FabricTransfer& t) const {
  const Network& net = topology_.network;
  const uint32_t per_node = topology_.gateways_per_node();
  const uint32_t destination = (t.destination / topology_.node.gpus) * per_node + t.gateway;
  const uint64_t h = hash(t);
  const auto& direct = direct_[device - net.gateways];
  auto it = std::lower_bound(direct.begin(), direct.end(), std::make_pair(destination, 0u));
  if (it != direct.end() && it->first == destination) return net_lists_.pick(it->second, h);
  const uint32_t list = switch_table_[size_t(device - net.gateways) * keys_ + key_of_[destination]];
  if (list == PortLists::kNone)
    throw std::runtime_error("no route from " + net.graph.devices[device].name + " to " +
                             net.graph.devices[destination].name);
  return net_lists_.pick(list, h);
}

}  // namespace tessera::platforms
