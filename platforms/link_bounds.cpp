// Network links that no allocation can fill (Routing::links_that_cannot_fill, docs/fidelity.md
// "Links that cannot fill").
//
// A transfer from gateway s to gateway t puts share_l(s, t) of its bytes on network link l
// (Routing::network_spread), and every such transfer also crosses a link out of s and a link
// into t whole. So, with r(s, t) the rate between them, in any allocation that keeps the
// gateways' own links within their capacity:
//   load(l) = sum over s, t of share_l(s, t) r(s, t)
//          <= sum over s of out(s) x max over t of share_l(s, t)     (the senders' bound)
//          <= sum over t of in(t) x max over s of share_l(s, t)      (the receivers' bound)
// with out(s), in(t) the capacities of the gateway's links to and from the network. A link
// whose capacity is at least the smaller bound never constrains a flow: the max-min allocation
// without it keeps it within its capacity, so it is the allocation with it too. On a tree that
// is not oversubscribed, where every switch spreads what it forwards evenly, that is every link
// between switches: a leaf's 20 uplinks carry a twentieth each of what its 20 gateways send.
//
// The shares depend on the source only through its first switch (a gateway with one uplink;
// one with several counts alone) and on the destination only through its routing key (the
// switches it hangs off). The senders' bound spreads each source class toward every key at once,
// following groups of keys that move alike (platforms/key_groups.h): on a three-tier tree of
// 2,048 leaves a source's spread toward all 2,047 other leaves visits some 130,000 links, where
// one spread per key would visit 2,047 x 2,100. The receivers' bound comes from the same
// spreads: per link, the largest share any source put on it toward each group of keys. What
// the spreads of many sources have in common is spread once for all of them
// (platforms/spread_lineages.h): every source of a pod reaches the cores alike toward every key
// outside the pod, so on 65,536 H100 each source spreads over its own pod and the 64 pods'
// spreads from the cores down are spread once each.
// Loads are compared in wire bytes, which needs every network link to frame packets alike.
#include <algorithm>
#include <stdexcept>

#include "platforms/key_groups.h"
#include "platforms/routing.h"
#include "platforms/spread_lineages.h"

namespace tessera::platforms {

namespace {

constexpr uint32_t kNone = PortLists::kNone;

bool same_framing(const protocol::LinkTiming& a, const protocol::LinkTiming& b) {
  return a.packet_overhead_bytes == b.packet_overhead_bytes &&
         a.max_packet_payload_bytes == b.max_packet_payload_bytes;
}

// Senders (or receivers) that share their spreads: a representative gateway, and what all of
// them can send (or receive) in bytes/s.
struct GatewayClass {
  uint32_t first = 0, second = kNone;  // two members, where there are two
  double capacity = 0.0;
  void add(uint32_t gateway, double bandwidth) {
    if (capacity == 0.0) first = gateway;
    else if (second == kNone) second = gateway;
    capacity += bandwidth;
  }
};

// One source's shares on the links between switches, each toward a group of keys. A link that
// several groups cross (routes of unequal hop counts, lists that overlap) keeps them apart
// until `settle` sums them key by key.
class SourceShares {
 public:
  explicit SourceShares(size_t directed) : held_(directed), touched_((directed + 63) / 64, 0) {}
  void add(uint32_t link, uint32_t group, double share) {
    Held& h = held_[link];
    if (h.group == kNone) {
      h = Held{share, group};
      touched_[link / 64] |= uint64_t(1) << (link % 64);
    } else if (h.group == group) {
      h.share += share;
    } else {
      if (h.group != kMixed) mixed_.push_back({link, h.group, h.share});
      h.group = kMixed;
      mixed_.push_back({link, group, share});
    }
  }
  // Calls f(link, shares) for every link crossed, in the order of the links' ids (what f reads
  // and writes per link is then read in order, not at random: on 65,536 GPUs each source's
  // spread crosses some 130,000 links), shares being disjoint groups of keys with the share of
  // each; then forgets them.
  template <typename F>
  void settle(KeyGroups& groups, F f) {
    std::sort(mixed_.begin(), mixed_.end(), [](const Mixed& a, const Mixed& b) { return a.link < b.link; });
    auto next_mixed = mixed_.begin();
    std::vector<std::pair<uint32_t, double>> shares;
    for (size_t word = 0; word < touched_.size(); ++word) {
      for (uint64_t bits = touched_[word]; bits != 0; bits &= bits - 1) {
        const uint32_t l = static_cast<uint32_t>(word * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        shares.clear();
        Held& h = held_[l];
        if (h.group != kMixed) {
          shares.emplace_back(h.group, h.share);
        } else {
          while (next_mixed->link < l) ++next_mixed;
          for (; next_mixed != mixed_.end() && next_mixed->link == l; ++next_mixed)
            shares.emplace_back(next_mixed->group, next_mixed->share);
          groups.disjoint(shares);
        }
        f(l, shares);
        h.group = kNone;
      }
      touched_[word] = 0;
    }
    mixed_.clear();
  }
  // Whether a link of `links` (a bit per directed link) has been crossed since the last settle.
  bool crosses(const std::vector<uint64_t>& links) const {
    for (size_t w = 0; w < touched_.size(); ++w)
      if ((touched_[w] & links[w]) != 0) return true;
    return false;
  }
  // Forgets what was added since the last settle.
  void forget() {
    for (size_t word = 0; word < touched_.size(); ++word) {
      for (uint64_t bits = touched_[word]; bits != 0; bits &= bits - 1)
        held_[word * 64 + static_cast<size_t>(__builtin_ctzll(bits))].group = kNone;
      touched_[word] = 0;
    }
    mixed_.clear();
  }

 private:
  static constexpr uint32_t kMixed = kNone - 1;
  struct Mixed {
    uint32_t link, group;
    double share;
  };
  // Per directed link: the group toward which it carries (or kMixed) and its share, side by side
  // (one wait on memory per link a spread crosses, not two).
  struct Held {
    double share = 0.0;
    uint32_t group = kNone;
  };
  std::vector<Held> held_;
  std::vector<uint64_t> touched_;  // per directed link a bit: crossed since the last settle
  std::vector<Mixed> mixed_;
};

// Keeps, per group, the largest share seen.
void keep_largest(std::vector<std::pair<uint32_t, double>>& most, uint32_t group, double share) {
  for (auto& [g, s] : most)
    if (g == group) {
      s = std::max(s, share);
      return;
    }
  most.emplace_back(group, share);
}

}  // namespace

// Spreads a transfer from gateway `from` toward every key of a group at once, stage by stage as
// spread_over does one transfer: what reaches a device toward a group splits by the device's
// partition of the keys, each part forwarded over its list, an equal part on each entry.
class Routing::SpreadToEveryKey {
 public:
  SpreadToEveryKey(const Routing& routing, KeyGroups& groups, const std::vector<GatewayClass>& receivers)
      : r_(routing), graph_(routing.topology_.network.graph), gws_(routing.topology_.network.gateways),
        groups_(groups), receivers_(receivers), partition_(graph_.devices.size(), kNone),
        lists_by_label_(graph_.devices.size()),
        slot_(graph_.devices.size(), kNone) {
    r_.prepare_every_column();  // its spreads route toward every key
    // Each port's far end and directed link, flat: the spreads read them some 10^8 times.
    first_port_.reserve(graph_.devices.size() + 1);
    for (uint32_t x = 0; x < graph_.devices.size(); ++x) {
      first_port_.push_back(static_cast<uint32_t>(ports_.size()));
      for (uint32_t p = 0; p < graph_.ports(x); ++p)
        ports_.push_back({graph_.neighbor(x, p), graph_.directed_link(x, p)});
    }
    first_port_.push_back(static_cast<uint32_t>(ports_.size()));
  }

  // Adds to `shares` what a transfer from `from` toward each key of `group` puts on every link
  // between switches; with `lineages`, but for the lineages it takes (SpreadLineages::take).
  // Throws std::logic_error for a route that does not end, or ends at another gateway than its
  // key's.
  void spread(uint32_t from, uint32_t group, SourceShares& shares, SpreadLineages* lineages = nullptr) {
    wave_.assign(1, Particle{from, group, 1.0, kNone});
    run(shares, lineages);
  }

  // Adds to `shares` what a lineage puts on every link between switches from where it stands on.
  void spread(const SpreadLineages::Lineage& lineage, SourceShares& shares) {
    wave_.clear();
    for (const auto& [device, share] : lineage.wave) wave_.push_back(Particle{device, lineage.group, share, kNone});
    run(shares, nullptr);
  }

  // The transfer toward the source's own key (to another of its gateways, where there is one),
  // spread as one transfer is; nothing where there is no route.
  void spread_to_own_key(uint32_t from, uint32_t group, SourceShares& shares) {
    const GatewayClass& t = receivers_[groups_.members(group).front()];
    const uint32_t to = t.first != from ? t.first : t.second;
    if (to == kNone) return;
    try {
      r_.network_spread(from, to, own_, scratch_);
    } catch (const std::exception&) {
      return;
    }
    for (const Share& x : own_)
      if (x.device >= gws_ && graph_.neighbor(x.device, x.port) >= gws_)
        shares.add(graph_.directed_link(x.device, x.port), group, x.share);
  }

 private:
  using Particle = SpreadParticle;

  void run(SourceShares& shares, SpreadLineages* lineages) {
    for (size_t stage = 0; !wave_.empty(); ++stage) {
      if (stage > graph_.devices.size())
        throw std::logic_error("a route from " + graph_.devices[wave_.front().device].name + " does not end");
      if (lineages != nullptr && stage > 0) lineages->take(wave_);
      next_.clear();
      for (const Particle& p : wave_)
        if (p.share > 0.0) forward(p, shares);
      merge_groups_apart();
      for (const Particle& p : next_) slot_[p.device] = kNone;
      std::swap(wave_, next_);
    }
  }

  uint32_t destination(uint32_t key) const { return receivers_[key].first; }

  // The device's list toward `key`: a gateway's uplinks (kNone: its one uplink), a switch's ports.
  uint32_t list_toward(uint32_t device, uint32_t key) const {
    return device < gws_ ? r_.uplink_list(device, destination(key)) : r_.switch_list_or_none(device, destination(key));
  }

  // The device's partition of the keys. A gateway with one uplink sends everything by it; a
  // gateway's list kNone is that one uplink too (a switch's: no route).
  uint32_t partition_of(uint32_t device) {
    const bool gateway = device < gws_, one_uplink = has_one_uplink(device);
    uint32_t& p = one_uplink ? one_uplink_partition_ : partition_[device];
    if (p != kNone) return p;
    const PortLists& lists = r_.net_lists_;
    auto same = [&](uint32_t a, uint32_t b) {
      return a == b || (a != kOnlyPort && b != kOnlyPort && lists.size(a) == lists.size(b) &&
                        std::equal(lists.ports.begin() + lists.begin[a], lists.ports.begin() + lists.begin[a + 1],
                                   lists.ports.begin() + lists.begin[b]));
    };
    // Each part's list comes out with it (lists of equal content are interchangeable); a
    // gateway's one uplink is port 0, as kNone says to forward().
    std::vector<uint32_t>& by_label = part_lists(device);
    p = groups_.partition(
        [&](uint32_t k) {
          if (one_uplink) return kOnlyPort;
          const uint32_t list = list_toward(device, k);
          return gateway && list == kNone ? kOnlyPort : list;
        },
        same, &by_label);
    for (uint32_t& list : by_label)
      if (list == kOnlyPort) list = kNone;
    return p;
  }
  bool has_one_uplink(uint32_t device) const { return device < gws_ && graph_.ports(device) == 1; }
  // The list of each part of the device's partition, by label (once partition_of has run).
  std::vector<uint32_t>& part_lists(uint32_t device) {
    return has_one_uplink(device) ? one_uplink_lists_ : lists_by_label_[device];
  }

  void forward(const Particle& p, SourceShares& shares) {
    const uint32_t x = p.device;  // a switch, or the source (what reaches a gateway has arrived)
    const uint32_t partition = partition_of(x);
    const std::vector<uint32_t>& lists_of_parts = part_lists(x);
    for (const KeyGroups::Part& part : groups_.split(p.group, partition)) {
      const uint32_t list = lists_of_parts[part.label];
      const PortLists& lists = r_.net_lists_;
      const uint32_t n = list == kNone ? 1 : lists.size(list);
      const double share = p.share / n;
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t port = list == kNone ? 0 : lists.ports[lists.begin[list] + i];
        const auto [y, link] = ports_[first_port_[x] + port];
        if (x >= gws_ && y >= gws_) shares.add(link, part.group, share);
        if (y >= gws_) arrive(y, part.group, share);
        else if (groups_.members(part.group).size() != 1 || destination(part.key) != y)
          throw std::logic_error("a route toward " + graph_.devices[destination(part.key)].name + " enters " +
                                 graph_.devices[y].name);
      }
    }
  }

  void arrive(uint32_t y, uint32_t group, double share) {
    uint32_t& first = slot_[y];
    for (uint32_t i = first; i != kNone; i = next_[i].same_device)
      if (next_[i].group == group) {
        next_[i].share += share;
        return;
      }
    if (first != kNone) apart_.push_back(y);
    next_.push_back(Particle{y, group, share, first});
    first = static_cast<uint32_t>(next_.size() - 1);
  }

  // A device that different groups reached at one stage (paths that meet): what it holds
  // toward each key is their sum, so its groups become disjoint ones of equal shares.
  void merge_groups_apart() {
    std::sort(apart_.begin(), apart_.end());
    apart_.erase(std::unique(apart_.begin(), apart_.end()), apart_.end());
    for (uint32_t y : apart_) {
      held_.clear();
      for (uint32_t i = slot_[y]; i != kNone; i = next_[i].same_device) {
        held_.emplace_back(next_[i].group, next_[i].share);
        next_[i].share = 0.0;  // replaced below
      }
      groups_.disjoint(held_);
      for (const auto& [group, share] : held_) next_.push_back(Particle{y, group, share, kNone});
    }
    apart_.clear();
  }

  static constexpr uint32_t kOnlyPort = kNone - 1;
  const Routing& r_;
  const Graph& graph_;
  const uint32_t gws_;
  KeyGroups& groups_;
  const std::vector<GatewayClass>& receivers_;
  struct Port {
    uint32_t neighbor, link;
  };
  std::vector<Port> ports_;          // by first_port_[device] + port
  std::vector<uint32_t> first_port_;
  std::vector<uint32_t> partition_;  // per device, once computed
  uint32_t one_uplink_partition_ = kNone;
  // Per device, the list of each part of its partition (by label; one for every gateway with
  // one uplink).
  std::vector<std::vector<uint32_t>> lists_by_label_;
  std::vector<uint32_t> one_uplink_lists_;
  std::vector<uint32_t> slot_;       // per device: its first particle in next_, or kNone
  std::vector<Particle> wave_, next_;
  std::vector<uint32_t> apart_;
  std::vector<std::pair<uint32_t, double>> held_;
  std::vector<Share> own_;
  SpreadScratch scratch_;
};

namespace {

// The lineages a source's spread handed over (SpreadLineages) are spread for it at the end where
// nothing else of it crosses their links: then they count `senders` more bytes/s. Otherwise
// (false) the source is to be spread again whole. Either way they are no longer handed over.
template <typename Spreads>
bool hand_over(SpreadLineages& lineages, Spreads& spreads, const SourceShares& shares, SourceShares& alone,
               KeyGroups& groups, double senders) {
  const std::vector<uint32_t>& handed = lineages.handed();
  bool apart = true;
  for (size_t i = 0; i < handed.size() && apart; ++i) {
    SpreadLineages::Lineage& l = lineages[handed[i]];
    if (!l.spread_alone) {  // the links it crosses, once
      l.links.assign(lineages.words(), 0);
      spreads.spread(l, alone);
      alone.settle(groups, [&l](uint32_t link, const auto&) { l.links[link / 64] |= uint64_t(1) << (link % 64); });
      l.spread_alone = true;
    }
    apart = !shares.crosses(l.links);
    for (size_t j = 0; j < i && apart; ++j) apart = lineages.apart(handed[j], handed[i]);
  }
  if (apart)
    for (uint32_t id : handed) lineages[id].senders += senders;
  lineages.forget_handed();
  return apart;
}

}  // namespace

std::vector<bool> Routing::links_that_cannot_fill(bool in_network_reduction) const {
  const Network& net = topology_.network;
  const Graph& graph = net.graph;
  const uint32_t gws = net.gateways;
  // Aggregation trees' flows cross links between switches outside any spread.
  if (gws == 0 || in_network_reduction) return {};
  const protocol::LinkTiming& framing = graph.links[graph.devices[0].port_links.at(0)].timing;
  std::vector<GatewayClass> senders(graph.devices.size()), receivers(keys_);
  for (uint32_t g = 0; g < gws; ++g)
    for (uint32_t p = 0; p < graph.ports(g); ++p) {
      const GraphLink& link = graph.links[graph.devices[g].port_links[p]];
      if (!same_framing(link.timing, framing)) return {};
      const double bandwidth = link.timing.bandwidth_bytes_per_s;
      receivers[key_of_[g]].add(g, bandwidth);
      // A gateway with one uplink sends as its switch's other gateways do (by the switch's
      // index); one with several is a class of its own (by its own); one cabled to another
      // gateway alone crosses no switch.
      if (graph.ports(g) > 1) senders[g].add(g, bandwidth);
      else if (graph.neighbor(g, 0) >= gws) senders[graph.neighbor(g, 0)].add(g, bandwidth);
    }
  std::vector<double> key_capacity(keys_);
  for (uint32_t k = 0; k < keys_; ++k) key_capacity[k] = receivers[k].capacity;
  KeyGroups groups(std::move(key_capacity));

  const uint32_t directed = 2 * static_cast<uint32_t>(graph.links.size());
  std::vector<double> by_senders(directed, 0.0);
  std::vector<std::vector<std::pair<uint32_t, double>>> most_toward(directed);  // per link: (group, largest share)
  SourceShares shares(directed), alone(directed);
  SpreadToEveryKey spreads(*this, groups, receivers);
  SpreadLineages lineages(directed);
  std::vector<uint32_t> others;
  // What a source puts on a link, the largest share toward any key (`toward`: disjoint groups
  // of keys with the share of each): the senders' bound takes it `senders` times, the
  // receivers' keeps the largest toward each group.
  auto into_bounds = [&](double senders) {
    return [&, senders](uint32_t l, const std::vector<std::pair<uint32_t, double>>& toward) {
      double most = 0.0;
      for (const auto& [group, share] : toward) {
        most = std::max(most, share);
        keep_largest(most_toward[l], group, share);
      }
      by_senders[l] += senders * most;
    };
  };
  try {
    for (uint32_t c = 0; c < senders.size(); ++c) {
      const GatewayClass& s = senders[c];
      if (s.capacity == 0.0) continue;
      const uint32_t own = key_of_[s.first];
      others.clear();
      for (uint32_t k = 0; k < keys_; ++k)
        if (k != own) others.push_back(k);
      const uint32_t everyone_else = groups.group(others), itself = groups.group({own});
      auto spread_source = [&](SpreadLineages* handing_over) {
        spreads.spread(s.first, everyone_else, shares, handing_over);
        spreads.spread_to_own_key(s.first, itself, shares);
      };
      spread_source(&lineages);
      if (!hand_over(lineages, spreads, shares, alone, groups, s.capacity)) {
        shares.forget();
        spread_source(nullptr);  // whole
      }
      shares.settle(groups, into_bounds(s.capacity));
    }
    for (uint32_t id = 0; id < lineages.size(); ++id) {
      if (lineages[id].senders == 0.0) continue;
      spreads.spread(lineages[id], shares);
      shares.settle(groups, into_bounds(lineages[id].senders));
    }
  } catch (const std::logic_error&) {
    return {};  // a route that does not end: nothing is proven
  }

  std::vector<bool> cannot_fill(directed, false);
  for (uint32_t li = 0; li < graph.links.size(); ++li) {
    const GraphLink& link = graph.links[li];
    if (link.a < gws || link.b < gws || !same_framing(link.timing, framing)) continue;
    const double capacity = link.timing.bandwidth_bytes_per_s * (1.0 + 1e-9);  // a tie fills nothing alone
    for (uint32_t l = 2 * li; l < 2 * li + 2; ++l)
      cannot_fill[l] = std::min(by_senders[l], groups.receivable(most_toward[l])) <= capacity;
  }
  return cannot_fill;
}

}  // namespace tessera::platforms
