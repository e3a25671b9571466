#include "platforms/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>

#include "platforms/every_key_hops.h"
#include "platforms/keyed_table.h"

namespace tessera::platforms {

namespace {

constexpr uint32_t kFar = 0xffffffffu;
using Frontier = std::vector<std::vector<uint32_t>>;  // devices by distance

// Ports in proportion to their bandwidth (ECMP weights), in port order, into `out`.
void weighted(const std::vector<std::pair<uint16_t, double>>& choices, std::vector<uint16_t>& out) {
  out.clear();
  if (choices.empty()) return;
  // Equal bandwidths (most switches' ports): each port once.
  if (std::all_of(choices.begin(), choices.end(), [&](const auto& c) { return c.second == choices[0].second; })) {
    for (const auto& c : choices) out.push_back(c.first);
    return;
  }
  double least = choices[0].second;
  for (const auto& c : choices) least = std::min(least, c.second);
  uint32_t g = 0;
  for (const auto& c : choices) g = std::gcd(g, static_cast<uint32_t>(std::lround(c.second / least * 4.0)));
  for (const auto& c : choices)
    out.insert(out.end(), static_cast<uint32_t>(std::lround(c.second / least * 4.0)) / g, c.first);
}

// The ports of `choices` as a set, where all are below 64 (0: some is not, or there are none).
uint64_t port_set(const std::vector<std::pair<uint16_t, double>>& choices) {
  uint64_t set = 0;
  for (const auto& c : choices) {
    if (c.first >= 64) return 0;
    set |= uint64_t(1) << c.first;
  }
  return set;
}

std::vector<uint16_t> weighted(const std::vector<std::pair<uint16_t, double>>& choices) {
  std::vector<uint16_t> out;
  weighted(choices, out);
  return out;
}

// A graph's ports flattened, device by device: the neighbour, the hop cost and the bandwidth
// of every port (the tables visit every port of every switch once per destination).
// Hop cost: a PCIe hop counts as four, so peer-to-peer traffic takes NVLink wherever NVLink
// reaches and crosses PCIe only where it must (to a NIC, or on a platform without NVLink).
struct Adjacency {
  explicit Adjacency(const Graph& g) {
    begin.reserve(g.devices.size() + 1);
    for (uint32_t d = 0; d < g.devices.size(); ++d) {
      begin.push_back(static_cast<uint32_t>(peer.size()));
      for (uint32_t p = 0; p < g.ports(d); ++p) {
        const GraphLink& l = g.links[g.devices[d].port_links[p]];
        peer.push_back(g.neighbor(d, p));
        cost.push_back(l.kind == LinkKind::Pcie ? 4 : 1);
        bandwidth.push_back(l.timing.bandwidth_bytes_per_s);
      }
    }
    begin.push_back(static_cast<uint32_t>(peer.size()));
  }
  uint32_t ports(uint32_t d) const { return begin[d + 1] - begin[d]; }
  uint32_t neighbor(uint32_t d, uint32_t p) const { return peer[begin[d] + p]; }
  uint32_t hop_cost(uint32_t d, uint32_t p) const { return cost[begin[d] + p]; }
  double port_bandwidth(uint32_t d, uint32_t p) const { return bandwidth[begin[d] + p]; }

  std::vector<uint32_t> begin, peer;
  std::vector<uint8_t> cost;
  std::vector<double> bandwidth;
};

// The hops a network switch may take toward the switch of a destination where shortest paths
// could close a cycle of full buffers (the reserved slots of Platform::deadlock_free_buffers
// break what is left):
//  - a torus routes in dimension order: hops along the first dimension in which the switch and
//    the destination's differ (no cycle of turns between dimensions);
//  - a dragonfly routes local, global, local (Kim et al., ISCA 2008): in the destination's
//    group straight to its router; elsewhere over a global link into that group where the
//    router has one, else to a router of its own group that has one (never two global links,
//    which a shortest path may take through a third group).
// Any other network takes every shortest hop. Devices are the network graph's.
struct RouteRule {
  const Network& net;
  const Adjacency& g;
  bool any() const { return !net.torus_dims.empty() || net.dragonfly_routers_per_group > 0; }
  uint32_t group(uint32_t sw) const { return net.dragonfly_group(sw - net.gateways); }
  bool reaches_group(uint32_t sw, uint32_t to) const {
    for (uint32_t p = 0; p < g.ports(sw); ++p) {
      const uint32_t w = g.neighbor(sw, p);
      if (w >= net.gateways && group(w) == to) return true;
    }
    return false;
  }
  bool allows(uint32_t x, uint32_t w, uint32_t target) const {
    const uint32_t gws = net.gateways;
    if (w < gws) return false;
    if (!net.torus_dims.empty())
      return net.first_differing_dimension(x - gws, w - gws) == net.first_differing_dimension(x - gws, target - gws);
    if (net.dragonfly_routers_per_group == 0) return true;
    const uint32_t home = group(x), there = group(target);
    if (home == there) return w == target;
    if (reaches_group(x, there)) return group(w) == there;
    return group(w) == home && reaches_group(w, there);
  }
};

struct NoPorts {
  void operator()(uint32_t, uint32_t, uint32_t) const {}
};

// Least-cost distances from `sources`; `transit(d)` says whether paths may pass through
// device d (sources always expand; a device that does not is never queued: a network's
// gateways outnumber its switches ten to one). Hop costs are small integers, so the frontier
// is a bucket per distance (Dial's algorithm) rather than a heap. As device u leaves the
// frontier at its least cost d, `settled(u, d, i)` is told each of its ports i that leads no
// farther than d plus the port's cost: every device nearer than u is final by then.
template <typename Transit, typename Settled = NoPorts>
void distances(const Adjacency& graph, const std::vector<uint32_t>& sources, Transit transit,
               std::vector<uint32_t>& dist, Frontier& frontier, Settled settled = {}) {
  dist.assign(graph.begin.size() - 1, kFar);
  for (auto& bucket : frontier) bucket.clear();
  if (frontier.empty()) frontier.resize(1);
  for (uint32_t s : sources) {
    dist[s] = 0;
    frontier[0].push_back(s);
  }
  for (uint32_t d = 0; d < frontier.size(); ++d)
    for (size_t k = 0; k < frontier[d].size(); ++k) {
      const uint32_t u = frontier[d][k];
      if (dist[u] != d || (d != 0 && !transit(u))) continue;
      for (uint32_t i = graph.begin[u]; i < graph.begin[u + 1]; ++i) {
        const uint32_t w = graph.peer[i];
        const uint32_t via = d + graph.cost[i];
        if (via < dist[w]) {
          dist[w] = via;
          if (!transit(w)) continue;  // (it would leave the frontier without expanding)
          if (frontier.size() <= via) frontier.resize(via + 1);
          frontier[via].push_back(w);
        } else {
          settled(u, d, i);
        }
      }
    }
}

// A switch's hops of least cost toward the sources: ports into switches nearer by their cost.
struct NearestHops {
  std::vector<uint32_t> first, count;  // per switch (device - gateways), into `ports`
  std::vector<uint32_t> ports;         // absolute port indices
};

// distances() from `sources` through switches (devices from `gateways` on), with every
// switch's hops of least cost found as it leaves the frontier: one visit of its ports serves
// both (a network's columns visit every port once per key, and a second visit was half their
// cost).
void nearest_hops(const Adjacency& graph, const std::vector<uint32_t>& sources, uint32_t gateways,
                  std::vector<uint32_t>& dist, Frontier& frontier, NearestHops& hops) {
  hops.count.assign(graph.begin.size() - 1 - gateways, 0);
  hops.first.resize(graph.begin.size() - 1 - gateways);
  hops.ports.clear();
  auto transit = [gateways](uint32_t d) { return d >= gateways; };
  distances(graph, sources, transit, dist, frontier, [&](uint32_t u, uint32_t d, uint32_t i) {
    const uint32_t w = graph.peer[i];
    if (d == 0 || w < gateways || dist[w] + graph.cost[i] != d) return;  // (u, not a source: a switch)
    if (hops.count[u - gateways]++ == 0) hops.first[u - gateways] = static_cast<uint32_t>(hops.ports.size());
    hops.ports.push_back(i);
  });
}

// The hops of least cost from switch x toward `target` that the network's rule allows (a
// torus's dimension order, a dragonfly's groups), which distances alone do not give.
void ruled_hops(const Adjacency& g, const RouteRule& rule, const std::vector<uint32_t>& dist, uint32_t target,
                uint32_t x, std::vector<std::pair<uint16_t, double>>& choices) {
  auto allowed = [&](uint32_t w) { return dist[w] != kFar && rule.allows(x, w, target); };  // (allows: switches only)
  uint32_t best = kFar;
  for (uint32_t i = g.begin[x]; i < g.begin[x + 1]; ++i)
    if (allowed(g.peer[i])) best = std::min(best, dist[g.peer[i]] + g.cost[i]);
  for (uint32_t i = g.begin[x]; i < g.begin[x + 1]; ++i)
    if (allowed(g.peer[i]) && dist[g.peer[i]] + g.cost[i] == best)
      choices.emplace_back(static_cast<uint16_t>(i - g.begin[x]), g.bandwidth[i]);
}

}  // namespace

uint32_t PortLists::add(const std::vector<uint16_t>& list) {
  if (list.empty()) return kNone;
  ports.insert(ports.end(), list.begin(), list.end());
  begin.push_back(static_cast<uint32_t>(ports.size()));
  return static_cast<uint32_t>(begin.size() - 2);
}

uint32_t PortLists::add(const std::vector<uint16_t>& list, const std::vector<uint32_t>& next) {
  for (size_t i = 0; i < list.size(); ++i) {
    uint16_t same = 0, earlier = 0;
    for (size_t j = 0; j < list.size(); ++j)
      if (next[j] == next[i]) {
        ++same;
        earlier += j < i;
      }
    same_next.push_back(same);
    before.push_back(earlier);
  }
  return add(list);
}

Routing::Routing(const PlatformGraph& topology) : topology_(topology) {
  build_node_tables();
  build_network_tables();
}

void Routing::build_node_tables() {
  const NodeTemplate& nt = topology_.node;
  const Graph& graph = nt.graph;
  const Adjacency g(graph);
  const uint32_t devices = static_cast<uint32_t>(graph.devices.size());
  const uint32_t gateways = static_cast<uint32_t>(nt.gateways.size());
  node_targets_ = nt.gpus + gateways;
  node_table_.assign(size_t(devices) * node_targets_, PortLists::kNone);
  gateway_index_.assign(devices, -1);
  for (uint32_t i = 0; i < gateways; ++i) gateway_index_[nt.gateways[i]] = static_cast<int32_t>(i);

  std::vector<uint32_t> dist;
  Frontier queue;
  std::vector<std::vector<uint32_t>> to_target(node_targets_);
  std::vector<std::pair<uint16_t, double>> choices;
  for (uint32_t target = 0; target < node_targets_; ++target) {
    const uint32_t device = target < nt.gpus ? target : nt.gateways[target - nt.gpus];
    distances(g, {device}, [&](uint32_t d) { return d >= nt.gpus; }, dist, queue);
    to_target[target] = dist;
    for (uint32_t v = 0; v < devices; ++v) {
      if (v == device || dist[v] == kFar) continue;
      choices.clear();
      for (uint32_t p = 0; p < g.ports(v); ++p) {
        const uint32_t w = g.neighbor(v, p);
        if (dist[w] != kFar && dist[w] + g.hop_cost(v, p) == dist[v] && (w == device || w >= nt.gpus))
          choices.emplace_back(static_cast<uint16_t>(p), g.port_bandwidth(v, p));
      }
      node_table_[size_t(v) * node_targets_ + target] = node_lists_.add(weighted(choices));
    }
  }
  // In-switch reduction: a GPU's NVLink ports, in proportion to their bandwidth.
  nvswitch_ports_.assign(nt.gpus, PortLists::kNone);
  for (uint32_t i = 0; i < nt.gpus; ++i) {
    choices.clear();
    for (uint32_t p = 0; p < g.ports(i); ++p)
      if (graph.devices[g.neighbor(i, p)].kind == DeviceKind::NvSwitch)
        choices.emplace_back(static_cast<uint16_t>(p), g.port_bandwidth(i, p));
    nvswitch_ports_[i] = node_lists_.add(weighted(choices));
  }
  // Each GPU leaves its node through its share of its nearest gateways, in proportion to its
  // first hop: m GPUs with the same n nearest gateways (n >= m) take n / m each, in order, as
  // NCCL gives each GPU its own NIC(s) (a GPU never uses a neighbour's NIC: with one GPU of a
  // DGX's PCIe switch busy it still has one NIC's line rate); fewer gateways than GPUs are
  // shared by all of them.
  std::vector<std::vector<uint32_t>> nearest_of(nt.gpus);
  std::map<std::vector<uint32_t>, uint32_t> sharers;  // nearest set -> GPUs with it
  for (uint32_t i = 0; i < nt.gpus && gateways > 0; ++i) {
    uint32_t nearest = kFar;
    for (uint32_t gw = 0; gw < gateways; ++gw) nearest = std::min(nearest, to_target[nt.gpus + gw][i]);
    for (uint32_t gw = 0; gw < gateways && nearest != kFar; ++gw)
      if (to_target[nt.gpus + gw][i] == nearest) nearest_of[i].push_back(gw);
    ++sharers[nearest_of[i]];
  }
  std::map<std::vector<uint32_t>, uint32_t> seen;
  gateway_choice_.assign(nt.gpus, PortLists::kNone);
  entry_choice_.assign(nt.gpus, PortLists::kNone);
  entry_gateways_.assign(size_t(nt.gpus) * gateways, false);
  for (uint32_t i = 0; i < nt.gpus && gateways > 0; ++i) {
    const std::vector<uint32_t>& set = nearest_of[i];
    const uint32_t n = uint32_t(set.size()), m = sharers[set], k = seen[set]++;
    const bool split = n >= m && m > 0 && n % m == 0;
    auto gateway_list = [&](uint32_t from, uint32_t to) {
      choices.clear();
      for (uint32_t e = from; e < to; ++e) {
        const uint32_t gw = set[e];
        const uint32_t list = node_table_[size_t(i) * node_targets_ + nt.gpus + gw];
        double bw = 0;
        for (uint32_t j = 0; j < node_lists_.size(list); ++j)
          bw += g.port_bandwidth(i, node_lists_.ports[node_lists_.begin[list] + j]);
        choices.emplace_back(static_cast<uint16_t>(gw), bw);
      }
      return node_lists_.add(weighted(choices));
    };
    gateway_choice_[i] = split ? gateway_list(k * (n / m), (k + 1) * (n / m)) : gateway_list(0, n);
    entry_choice_[i] = gateway_list(0, n);
    for (uint32_t gw : set) entry_gateways_[size_t(i) * gateways + gw] = true;
  }
  gateway_entries_.assign(size_t(nt.gpus) * gateways, {0, 0});
  for (uint32_t i = 0; i < nt.gpus; ++i) {
    const uint32_t list = gateway_choice_[i];
    if (list == PortLists::kNone) continue;
    for (uint32_t e = 0; e < node_lists_.size(list); ++e) {
      auto& [first, count] = gateway_entries_[size_t(i) * gateways + node_lists_.ports[node_lists_.begin[list] + e]];
      if (count++ == 0) first = static_cast<uint16_t>(e);
    }
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

// What the network's tables are built from, kept for the keys' columns built on first use.
struct Routing::NetworkColumns {
  explicit NetworkColumns(const Graph& graph) : g(graph) {}
  const Adjacency g;
  std::vector<std::vector<uint32_t>> key_switches;  // per key: the switches its gateways hang off
  std::vector<uint32_t> multi_uplink;               // gateways with several uplinks
  std::vector<KeyColumn> columns;  // per key, built on first use
  // Lists given to devices, by the hash of the device and its ports: a device given a list equal
  // to one it was given before shares it.
  KeyedTable<uint32_t> list_of;
  // Column blocks (Routing::kColumnBlock lists each, one block after the other), found by hash.
  std::vector<uint32_t> blocks;
  KeyedTable<uint32_t> block_of;
  std::vector<uint32_t> last;  // by device: the list it was given last
  // Scratch of a column's build: its lists per switch, distances, their frontier, a device's
  // choices and list.
  std::vector<uint32_t> column, next, dist;
  Frontier frontier;
  NearestHops hops;
  std::vector<std::pair<uint16_t, double>> choices;
  std::vector<uint16_t> list;
  // By switch (device - gateways): its hops toward the last key it took a list toward, as a set
  // of its first 64 ports (0: none such), and that list. A switch's list is a function of its
  // hops alone, and toward most keys a switch has the same hops (its uplinks): those reuse the
  // list with no weighing and no compare of lists (for the columns searched key by key).
  std::vector<uint64_t> hop_set;
  std::vector<uint32_t> hop_set_list;
  // Every key's hops, found at once (prepare_every_column), and per switch and set of hops its
  // list, made on first use (PortLists::kNone until then).
  EveryKeyHops every;
  std::vector<std::vector<uint32_t>> every_lists;
};

Routing::~Routing() = default;

void Routing::build_network_tables() {
  const Network& net = topology_.network;
  const Graph& graph = net.graph;
  const uint32_t gws = net.gateways;
  const uint32_t switches = net.switches();
  if (gws == 0) return;
  network_ = std::make_unique<NetworkColumns>(graph);
  NetworkColumns& n = *network_;
  const Adjacency& g = n.g;
  const uint32_t devices = static_cast<uint32_t>(graph.devices.size());
  n.last.assign(devices, PortLists::kNone);

  // Gateways hanging off the same set of switches share one table column (a key).
  std::map<std::vector<uint32_t>, uint32_t> keys;
  key_of_.resize(gws);
  std::vector<uint32_t> set;
  for (uint32_t d = 0; d < gws; ++d) {
    set.clear();
    for (uint32_t p = 0; p < g.ports(d); ++p) set.push_back(g.neighbor(d, p));
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    if (set.empty())
      throw PlatformError(topology_.nodes > 1 ? "network.links" : "network",
                          graph.devices[d].name + " is not cabled to the network");
    auto [it, fresh] = keys.emplace(set, static_cast<uint32_t>(keys.size()));
    if (fresh) n.key_switches.push_back(set);
    key_of_[d] = it->second;
  }
  keys_ = static_cast<uint32_t>(n.key_switches.size());
  check_connected();

  std::vector<std::pair<uint16_t, double>> choices;
  std::vector<uint16_t> list;
  direct_.assign(switches, {});
  for (uint32_t x = gws; x < devices; ++x) {
    std::map<uint32_t, std::vector<std::pair<uint16_t, double>>> to_gateway;
    for (uint32_t p = 0; p < g.ports(x); ++p) {
      const uint32_t w = g.neighbor(x, p);
      if (w < gws) to_gateway[w].emplace_back(static_cast<uint16_t>(p), g.port_bandwidth(x, p));
    }
    for (const auto& [w, to] : to_gateway) {
      weighted(to, list);
      direct_[x - gws].emplace_back(w, net_lists_.add(list, std::vector<uint32_t>(list.size(), w)));
    }
  }

  uplink_table_.assign(gws, PortLists::kNone);
  for (uint32_t d = 0; d < gws; ++d)
    if (g.ports(d) > 1) {
      uplink_table_[d] = static_cast<uint32_t>(n.multi_uplink.size());
      n.multi_uplink.push_back(d);
    }
  n.columns.resize(keys_);
}

// Every key's switches reach the switches of every key holding gateways of the same index
// (transfers keep their gateway index across the network, so the planes of an NVLink network
// are separate networks): the network's switches in connected pieces, paths passing through
// switches only, as the tables' routes do.
void Routing::check_connected() {
  const Network& net = topology_.network;
  const Graph& graph = net.graph;
  const uint32_t gws = net.gateways;
  const Adjacency& g = network_->g;
  const auto& key_switches = network_->key_switches;
  std::vector<uint32_t> piece(graph.devices.size(), kFar), stack;
  uint32_t pieces = 0;
  for (const auto& switches : key_switches)
    for (uint32_t start : switches) {
      if (piece[start] != kFar) continue;
      piece[start] = pieces;
      stack.assign(1, start);
      while (!stack.empty()) {
        const uint32_t u = stack.back();
        stack.pop_back();
        if (u < gws && u != start) continue;  // a gateway is reached, never passed through
        for (uint32_t i = g.begin[u]; i < g.begin[u + 1]; ++i)
          if (const uint32_t w = g.peer[i]; piece[w] == kFar) {
            piece[w] = pieces;
            stack.push_back(w);
          }
      }
      ++pieces;
    }
  if (pieces <= 1) return;
  rails_joined_ = false;  // (gateways of different indices may be apart, as NVLink planes are)
  const uint32_t per_node = topology_.gateways_per_node();
  std::vector<std::vector<bool>> key_indices(keys_, std::vector<bool>(per_node, false));
  for (uint32_t d = 0; d < gws; ++d) key_indices[key_of_[d]][d % per_node] = true;
  auto share_an_index = [&](uint32_t a, uint32_t b) {
    for (uint32_t i = 0; i < per_node; ++i)
      if (key_indices[a][i] && key_indices[b][i]) return true;
    return false;
  };
  std::vector<bool> reached(pieces);
  for (uint32_t k = 0; k < keys_; ++k) {
    std::fill(reached.begin(), reached.end(), false);
    for (uint32_t x : key_switches[k]) reached[piece[x]] = true;
    for (uint32_t other = 0; other < keys_; ++other)
      for (uint32_t x : key_switches[other])
        if (!reached[piece[x]] && share_an_index(k, other))
          throw PlatformError(topology_.nodes > 1 && !net.graph.devices.empty() ? "network.links" : "network",
                              "the network is not connected: " + graph.devices[x].name + " cannot reach " +
                                  graph.devices[key_switches[k][0]].name);
  }
}

// Cuts a column's lists into blocks, each block stored once.
void Routing::store_blocks(NetworkColumns& n, KeyColumn& c) {
  constexpr uint32_t kBlock = kColumnBlock;
  n.column.resize((n.column.size() + kBlock - 1) / kBlock * kBlock, PortLists::kNone);
  c.switch_blocks.clear();
  for (size_t first = 0; first < n.column.size(); first += kBlock) {
    const auto begin = n.column.begin() + first, end = begin + kBlock;
    ContentHash h;
    for (auto it = begin; it != end; ++it) h.add(uint64_t(*it));
    const uint32_t* found = n.block_of.find(h.value);
    if (found && std::equal(begin, end, n.blocks.begin() + size_t(*found) * kBlock)) {
      c.switch_blocks.push_back(*found);
      continue;
    }
    const uint32_t id = static_cast<uint32_t>(n.blocks.size() / kBlock);
    n.blocks.insert(n.blocks.end(), begin, end);
    if (!found) n.block_of.insert(h.value, id);  // (a different block of the same hash: not shared)
    c.switch_blocks.push_back(id);
  }
}

size_t Routing::column_entries() const {
  if (!network_) return 0;
  size_t entries = network_->blocks.size();
  for (const KeyColumn& c : network_->columns) entries += c.switch_blocks.size();
  return entries;
}

uint32_t Routing::switch_entry(const KeyColumn& c, uint32_t s) const {
  return network_->blocks[size_t(c.switch_blocks[s / kColumnBlock]) * kColumnBlock + s % kColumnBlock];
}

bool Routing::prepare_every_column() const {
  if (!network_) return false;
  NetworkColumns& n = *network_;
  if (!n.every.empty()) return true;
  // A ruled network's hops are not the nearest alone, and a gateway with several uplinks takes
  // its own from the distances: those keep their searches key by key.
  if (RouteRule{topology_.network, n.g}.any() || !n.multi_uplink.empty()) return false;
  n.every = every_key_hops(n.g.begin, n.g.peer, n.g.cost, topology_.network.gateways, n.key_switches);
  n.every_lists.resize(n.every.sets.size());
  for (size_t s = 0; s < n.every.sets.size(); ++s) n.every_lists[s].assign(n.every.sets[s].size(), PortLists::kNone);
  return !n.every.empty();
}

// Key k's column: a search from its switches, then each switch's (and multi-uplink gateway's)
// next hops toward it, those of equal least cost weighted by bandwidth. Built on the first
// route toward the key: a run routes toward few of the keys of a large network (with symmetry,
// those of the GPUs it simulates), and the columns of all of them cost keys x links.
const Routing::KeyColumn& Routing::column(uint32_t k) const {
  NetworkColumns& n = *network_;
  KeyColumn& c = n.columns[k];
  if (c.built) return c;
  c.built = true;
  const uint32_t gws = topology_.network.gateways;
  const Adjacency& g = n.g;
  const uint32_t devices = static_cast<uint32_t>(g.begin.size() - 1);
  auto same = [&](uint32_t list) {
    return list != PortLists::kNone && net_lists_.size(list) == n.list.size() &&
           std::equal(n.list.begin(), n.list.end(), net_lists_.ports.begin() + net_lists_.begin[list]);
  };
  auto add_list = [&](uint32_t device) {  // a list equal to one the same device got is shared
    if (n.list.empty()) return PortLists::kNone;
    if (same(n.last[device])) return n.last[device];  // (mostly: the one it got last)
    ContentHash h;
    h.add(uint64_t(device));
    for (uint16_t p : n.list) h.add(uint64_t(p));
    const uint32_t* given = n.list_of.find(h.value);
    if (given && same(*given)) return n.last[device] = *given;
    n.next.clear();
    for (uint16_t p : n.list) n.next.push_back(g.neighbor(device, p));
    const uint32_t added = net_lists_.add(n.list, n.next);
    if (!given) n.list_of.insert(h.value, added);  // (a different list of the same hash: not shared)
    return n.last[device] = added;
  };
  n.column.assign(devices - gws, PortLists::kNone);
  if (!n.every.empty()) {  // every key's hops are known: each switch's set of them
    const uint8_t* index = &n.every.index[size_t(k) * n.every.switches];
    for (uint32_t s = 0; s < n.every.switches; ++s) {
      if (index[s] == EveryKeyHops::kNone) continue;
      uint32_t& list = n.every_lists[s][index[s]];
      if (list == PortLists::kNone) {
        n.choices.clear();
        for (uint64_t set = n.every.sets[s][index[s]]; set != 0; set &= set - 1) {
          const uint16_t port = static_cast<uint16_t>(__builtin_ctzll(set));
          n.choices.emplace_back(port, g.port_bandwidth(gws + s, port));
        }
        weighted(n.choices, n.list);
        list = add_list(gws + s);
      }
      n.column[s] = list;
    }
    store_blocks(n, c);  // (no gateway has several uplinks here)
    return c;
  }
  // Of the hops the network's rule allows (all, on most networks), the shortest.
  const RouteRule rule{topology_.network, g};
  const bool ruled = rule.any() && n.key_switches[k].size() == 1;
  if (ruled) distances(g, n.key_switches[k], [&](uint32_t d) { return d >= gws; }, n.dist, n.frontier);
  else nearest_hops(g, n.key_switches[k], gws, n.dist, n.frontier, n.hops);
  n.hop_set.resize(devices - gws, 0);
  n.hop_set_list.resize(devices - gws, PortLists::kNone);
  for (uint32_t x = gws; x < devices; ++x) {
    if (n.dist[x] == 0 || n.dist[x] == kFar) continue;
    n.choices.clear();
    if (ruled) ruled_hops(g, rule, n.dist, n.key_switches[k][0], x, n.choices);
    else
      for (uint32_t j = n.hops.first[x - gws], end = j + n.hops.count[x - gws]; j < end; ++j)
        n.choices.emplace_back(static_cast<uint16_t>(n.hops.ports[j] - g.begin[x]), g.bandwidth[n.hops.ports[j]]);
    const uint64_t set = port_set(n.choices);
    uint32_t& list = n.column[x - gws];
    if (set != 0 && set == n.hop_set[x - gws]) {
      list = n.hop_set_list[x - gws];
      continue;
    }
    weighted(n.choices, n.list);
    list = add_list(x);
    n.hop_set[x - gws] = set;
    n.hop_set_list[x - gws] = list;
  }
  store_blocks(n, c);
  c.uplinks.assign(n.multi_uplink.size(), PortLists::kNone);
  for (size_t row = 0; row < n.multi_uplink.size(); ++row) {
    const uint32_t d = n.multi_uplink[row];
    uint32_t nearest = kFar;
    for (uint32_t p = 0; p < g.ports(d); ++p) nearest = std::min(nearest, n.dist[g.neighbor(d, p)]);
    n.choices.clear();
    for (uint32_t p = 0; p < g.ports(d); ++p)
      if (n.dist[g.neighbor(d, p)] == nearest)
        n.choices.emplace_back(static_cast<uint16_t>(p), g.port_bandwidth(d, p));
    weighted(n.choices, n.list);
    c.uplinks[row] = add_list(d);
  }
  return c;
}

void Routing::mark_routes(uint32_t from, uint32_t target, uint8_t use, std::vector<uint8_t>& links) const {
  const NodeTemplate& nt = topology_.node;
  const Graph& g = nt.graph;
  const uint32_t end = target < nt.gpus ? target : nt.gateways[target - nt.gpus];
  std::vector<uint32_t> stack{from};
  std::vector<bool> seen(g.devices.size(), false);
  seen[from] = true;
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    if (v == end) continue;
    const uint32_t list = node_table_[size_t(v) * node_targets_ + target];
    if (list == PortLists::kNone) continue;
    for (uint32_t i = node_lists_.begin[list]; i < node_lists_.begin[list + 1]; ++i) {
      const uint32_t port = node_lists_.ports[i];
      links[g.directed_link(v, port)] |= use;
      const uint32_t w = g.neighbor(v, port);
      if (!seen[w]) stack.push_back(w);
      seen[w] = true;
    }
  }
}

std::vector<uint8_t> Routing::node_link_use() const {
  const NodeTemplate& nt = topology_.node;
  const Graph& g = nt.graph;
  std::vector<uint8_t> links(2 * g.links.size(), 0);
  const uint32_t gateways = static_cast<uint32_t>(nt.gateways.size());
  for (uint32_t a = 0; a < nt.gpus; ++a) {
    for (uint32_t b = 0; b < nt.gpus; ++b)
      if (a != b) mark_routes(a, b, kBetweenGpus, links);
    for (uint32_t gw = 0; gw < gateways; ++gw) {
      mark_routes(a, nt.gpus + gw, kThroughGateways, links);              // leaving
      mark_routes(nt.gateways[gw], a, kThroughGateways, links);           // entering
    }
    // In-switch reduction: up any of the GPU's NVSwitch ports; back down by the tables.
    if (nvswitch_ports_[a] == PortLists::kNone) continue;
    for (uint32_t i = node_lists_.begin[nvswitch_ports_[a]]; i < node_lists_.begin[nvswitch_ports_[a] + 1]; ++i) {
      const uint32_t port = node_lists_.ports[i];
      links[g.directed_link(a, port)] |= kBetweenGpus;
      for (uint32_t b = 0; b < nt.gpus; ++b) mark_routes(g.neighbor(a, port), b, kBetweenGpus, links);
    }
  }
  return links;
}

bool Routing::stays_in_node(uint32_t node, const protocol::FabricTransfer& t) const {
  return t.purpose != protocol::TransferPurpose::NetworkReduce && t.destination / topology_.node.gpus == node;
}

bool Routing::inside_node(uint32_t node, uint32_t device, const protocol::FabricTransfer& t) const {
  return (device < topology_.node.gpus && protocol::in_switch(t.purpose)) || stays_in_node(node, t);
}

uint32_t Routing::node_port(uint32_t node, uint32_t device, const protocol::FabricTransfer& t) const {
  const NodeTemplate& nt = topology_.node;
  if (device < nt.gpus && protocol::in_switch(t.purpose)) {
    if (nvswitch_ports_[device] == PortLists::kNone)
      throw std::runtime_error("GPU " + std::to_string(node * nt.gpus + device) +
                               " has no NVSwitch for in-switch reduction");
    return node_lists_.pick(nvswitch_ports_[device], switch_hash(t));
  }
  return node_pick(node, device, t.destination % nt.gpus, t);
}

uint32_t Routing::node_pick(uint32_t node, uint32_t device, uint32_t target, const protocol::FabricTransfer& t) const {
  const NodeTemplate& nt = topology_.node;
  const uint32_t list = node_table_[size_t(device) * node_targets_ + target];
  if (list == PortLists::kNone)
    throw std::runtime_error("no route from " + nt.graph.devices[device].name + " of node " +
                             std::to_string(node) + " to GPU " + std::to_string(t.destination));
  return node_lists_.pick(list, hash(t));
}

uint32_t Routing::node_next(uint32_t node, uint32_t device, protocol::FabricTransfer& t) const {
  if (inside_node(node, device, t)) return node_port(node, device, t);
  const NodeTemplate& nt = topology_.node;
  const uint64_t h = hash(t);
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
  } else {
    if (device < nt.gpus && t.source == node * nt.gpus + device) {
      const uint32_t choice = gateway_choice_[device];
      if (choice == PortLists::kNone)
        throw std::runtime_error("GPU " + std::to_string(t.source) + " has no way out of its node to GPU " +
                                 std::to_string(t.destination));
      t.gateway = node_lists_.pick(choice, gateway_hash(t));
    }
    if (gateway_index_[device] == static_cast<int32_t>(t.gateway)) {
      const uint32_t per_node = topology_.gateways_per_node();
      const uint32_t here = node * per_node + t.gateway;
      const uint32_t there = (t.destination / nt.gpus) * per_node + entry_gateway(t);
      t.turn = gateway_turn(t, h);
      return nt.graph.ports(device) + gateway_uplink(here, there, t.turn);
    }
    target = nt.gpus + t.gateway;
  }
  return node_pick(node, device, target, t);
}

bool Routing::leaves_as(uint32_t from, uint32_t to, uint32_t shift) const {
  const uint32_t a = gateway_choice_[from], b = gateway_choice_[to];
  if (a == PortLists::kNone || b == PortLists::kNone || shift == 0) return false;
  const uint32_t n = node_lists_.size(a);
  if (node_lists_.size(b) != n || to < from || (to - from) % n != 0) return false;
  for (uint32_t e = 0; e < n; ++e) {
    const uint32_t gf = node_lists_.ports[node_lists_.begin[a] + e], gt = node_lists_.ports[node_lists_.begin[b] + e];
    if (gt != gf + shift) return false;
    for (uint32_t k = 0; k < n; ++k)  // none of `from`'s own
      if (node_lists_.ports[node_lists_.begin[a] + k] == gt) return false;
  }
  return true;
}

uint32_t Routing::entry_gateway(const protocol::FabricTransfer& t) const {
  const NodeTemplate& nt = topology_.node;
  const uint32_t gpu = t.destination % nt.gpus;
  const uint32_t list = entry_choice_[gpu];
  if (!rails_joined_ || list == PortLists::kNone || entry_gateways_[size_t(gpu) * nt.gateways.size() + t.gateway])
    return t.gateway;
  return node_lists_.pick(list, gateway_hash(t));
}

uint64_t Routing::gateway_turn(const protocol::FabricTransfer& t, uint64_t h) const {
  const NodeTemplate& nt = topology_.node;
  const uint32_t gpu = t.source % nt.gpus;
  const uint32_t list = gateway_choice_[gpu];
  if (list == PortLists::kNone) return h;
  const auto [first, count] = gateway_entries_[size_t(gpu) * nt.gateways.size() + t.gateway];
  const uint32_t n = node_lists_.size(list);
  const uint64_t g = gateway_hash(t);
  const uint32_t entry = static_cast<uint32_t>(g % n);
  // A chunk that did not pick this gateway by its hash (a reduced sum leaving a switch).
  if (entry < first || entry >= uint32_t(first) + count) return h;
  // Its place among its transfer's chunks through this gateway, from the transfer's own offset.
  return g / n * count + (entry - first) + identity(t);
}

uint32_t Routing::uplink_list(uint32_t gateway, uint32_t destination) const {
  const uint32_t row = uplink_table_[gateway];
  if (row == PortLists::kNone) return PortLists::kNone;
  return column(key_of_[destination]).uplinks[row];
}

uint32_t Routing::gateway_uplink(uint32_t gateway, uint32_t destination, uint64_t& turn) const {
  const uint32_t list = uplink_list(gateway, destination);
  return list == PortLists::kNone ? 0 : net_lists_.pick_turn(list, turn);
}

uint32_t Routing::switch_list_or_none(uint32_t device, uint32_t destination) const {
  const Network& net = topology_.network;
  const auto& direct = direct_[device - net.gateways];
  auto it = std::lower_bound(direct.begin(), direct.end(), std::make_pair(destination, 0u));
  if (it != direct.end() && it->first == destination) return it->second;
  return switch_entry(column(key_of_[destination]), device - net.gateways);
}

uint32_t Routing::switch_list(uint32_t device, uint32_t destination) const {
  const Network& net = topology_.network;
  const uint32_t list = switch_list_or_none(device, destination);
  if (list == PortLists::kNone)
    throw std::runtime_error("no route from " + net.graph.devices[device].name + " to " +
                             net.graph.devices[destination].name);
  return list;
}

uint32_t Routing::network_next(uint32_t device, protocol::FabricTransfer& t) const {
  const uint32_t per_node = topology_.gateways_per_node();
  const uint32_t destination = (t.destination / topology_.node.gpus) * per_node + entry_gateway(t);
  return net_lists_.pick_turn(switch_list(device, destination), t.turn);
}

namespace {

// Spreads a transfer from `from` to `to` over a graph's weighted lists, an equal part of what a
// device forwards on each entry of its list (`list_of(x)`; kNone: its only port), stage by
// stage, until it has all arrived; devices where `forwards(y)` is false are ends (only `to` may
// be reached among them). One Share per link crossed, summed over the stages.
template <typename ListOf, typename Forwards>
void spread_over(const Graph& graph, const PortLists& lists, uint32_t from, uint32_t to, ListOf list_of,
                 Forwards forwards, std::vector<Routing::Share>& out, Routing::SpreadScratch& s) {
  out.clear();
  s.slot.resize(graph.devices.size(), PortLists::kNone);
  s.wave.clear();
  s.next.clear();
  bool arrived = false;
  // Device x forwards `share` of the transfer over its list's entries, an equal part each.
  auto forward = [&](uint32_t x, uint32_t list, double share) {
    const uint32_t n = list == PortLists::kNone ? 1 : lists.size(list);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t port = list == PortLists::kNone ? 0 : lists.ports[lists.begin[list] + i];
      out.push_back(Routing::Share{x, port, share / n});
      const uint32_t y = graph.neighbor(x, port);
      if (y == to || !forwards(y)) {
        if (y != to) throw std::logic_error("a route from " + graph.devices[from].name + " to " +
                                            graph.devices[to].name + " enters " + graph.devices[y].name);
        arrived = true;
        continue;
      }
      if (s.slot[y] == PortLists::kNone) {
        s.slot[y] = static_cast<uint32_t>(s.next.size());
        s.next.emplace_back(y, 0.0);
      }
      s.next[s.slot[y]].second += share / n;
    }
  };
  forward(from, list_of(from), 1.0);
  for (size_t stage = 0; !s.next.empty(); ++stage) {
    if (stage > graph.devices.size())
      throw std::logic_error("the route from " + graph.devices[from].name + " to " + graph.devices[to].name +
                             " does not end");
    std::swap(s.wave, s.next);
    s.next.clear();
    for (const auto& [x, share] : s.wave) s.slot[x] = PortLists::kNone;
    for (const auto& [x, share] : s.wave) forward(x, list_of(x), share);
  }
  if (!arrived) throw std::logic_error("no route from " + graph.devices[from].name + " to " + graph.devices[to].name);
  // One entry per link: a port listed twice (a faster link, weighted), or a device met again at
  // a later stage (paths of unequal hop counts), adds its shares.
  std::sort(out.begin(), out.end(), [](const Routing::Share& a, const Routing::Share& b) {
    return a.device != b.device ? a.device < b.device : a.port < b.port;
  });
  size_t kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[kept - 1].device == out[i].device && out[kept - 1].port == out[i].port)
      out[kept - 1].share += out[i].share;
    else
      out[kept++] = out[i];
  }
  out.resize(kept);
}

}  // namespace

void Routing::network_spread(uint32_t from, uint32_t to, std::vector<Share>& out, SpreadScratch& s) const {
  const uint32_t gateways = topology_.network.gateways;
  // The first list is the gateway's uplinks; gateways never forward (it is the destination's).
  spread_over(
      topology_.network.graph, net_lists_, from, to,
      [&](uint32_t x) { return x == from ? uplink_list(from, to) : switch_list(x, to); },
      [&](uint32_t y) { return y >= gateways; }, out, s);
}

void Routing::node_spread(uint32_t from, uint32_t target, std::vector<Share>& out, SpreadScratch& s) const {
  const NodeTemplate& nt = topology_.node;
  const uint32_t to = target < nt.gpus ? target : nt.gateways[target - nt.gpus];
  out.clear();
  if (from == to) return;
  // GPUs never forward; a gateway does inside its node (an NVSwitch with uplinks).
  spread_over(
      nt.graph, node_lists_, from, to,
      [&](uint32_t x) {
        const uint32_t list = node_table_[size_t(x) * node_targets_ + target];
        if (list == PortLists::kNone)
          throw std::runtime_error("no route from " + nt.graph.devices[x].name + " to " + nt.graph.devices[to].name);
        return list;
      },
      [&](uint32_t y) { return y >= nt.gpus; }, out, s);
}

}  // namespace tessera::platforms
