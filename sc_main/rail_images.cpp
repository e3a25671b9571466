#include "sc_main/rail_images.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessera::app {
namespace {

// Per place in the node: the lowest place that leaves the node as it does, some gateways on,
// and that is no image itself (-1: none).
std::vector<int> place_sources(const platforms::Routing& routing) {
  const platforms::NodeTemplate& nt = routing.topology().node;
  const uint32_t g = nt.gpus, gateways = uint32_t(nt.gateways.size());
  std::vector<int> source(g, -1);
  for (uint32_t t = 1; t < g; ++t)
    for (uint32_t s = 0; s < t && source[t] < 0; ++s) {
      if (source[s] >= 0) continue;
      for (uint32_t shift = 1; shift < gateways && source[t] < 0; ++shift)
        if (routing.leaves_as(s, t, shift)) source[t] = int(s);
    }
  return source;
}

// What transfers' paths cost: their links' timings in order, and their legs' links' with their
// shares, sorted (a leg spreads over links in no order that matters); each pair of legs compared
// once.
class PathCosts {
 public:
  explicit PathCosts(const models::PathProvider& paths) : paths_(paths) {}
  // Whether b's path costs, link by link, what a's does.
  bool alike(const protocol::FabricTransfer& a, const protocol::FabricTransfer& b) {
    const uint32_t la = paths_.path_with_leg(a, links_, shares_);
    const std::vector<Cost> pa = costs();
    const uint32_t lb = paths_.path_with_leg(b, links_, shares_);
    if (costs() != pa || (la == models::PathProvider::kNoLeg) != (lb == models::PathProvider::kNoLeg)) return false;
    if (la == models::PathProvider::kNoLeg || la == lb) return true;
    const auto [known, fresh] = legs_alike_.emplace(std::pair{la, lb}, false);
    if (fresh) known->second = leg(la) == leg(lb);
    return known->second;
  }

 private:
  using Cost = std::tuple<double, uint64_t, uint32_t, uint32_t, double>;
  Cost cost(uint32_t l, double share) const {
    const protocol::LinkTiming& k = paths_.link(l).timing;
    return Cost{k.bandwidth_bytes_per_s, k.latency.value(), k.packet_overhead_bytes, k.max_packet_payload_bytes, share};
  }
  std::vector<Cost> costs() const {
    std::vector<Cost> out;
    for (size_t i = 0; i < links_.size(); ++i) out.push_back(cost(links_[i], models::PathProvider::share(shares_, i)));
    return out;
  }
  std::vector<Cost> leg(uint32_t id) const {
    std::vector<Cost> out;
    paths_.leg(id).each([&](uint32_t l, double share) { out.push_back(cost(l, share)); });
    std::sort(out.begin(), out.end());
    return out;
  }
  const models::PathProvider& paths_;
  std::vector<uint32_t> links_;
  std::vector<double> shares_;
  std::map<std::pair<uint32_t, uint32_t>, bool> legs_alike_;
};

// Whether place t's transfers to other nodes cost what place s's do, between the same places (a
// data-parallel group's, a pipeline's), on both gateways a chunk may take: from node 0 to the
// next 64 nodes and to those 128, 256, ... on, and back (a sample: the flow fabric checks every
// transfer as the run goes).
bool paths_alike(PathCosts& costs, uint32_t gpus, uint32_t nodes, uint32_t s, uint32_t t) {
  std::vector<uint32_t> others;
  for (uint32_t other = 1; other < nodes && other <= 64; ++other) others.push_back(other);
  for (uint32_t other = 128; other < nodes; other *= 2) others.push_back(other);
  for (uint32_t other : others)
    for (uint32_t chunk = 0; chunk < 2; ++chunk)
      for (const auto& [from, to] : {std::pair{0u, other}, std::pair{other, 0u}}) {
        protocol::FabricTransfer a;
        a.source = from * gpus + s;
        a.destination = to * gpus + s;
        a.chunk = chunk;
        protocol::FabricTransfer b = a;
        b.source += t - s;
        b.destination += t - s;
        if (!costs.alike(a, b)) return false;
      }
  return true;
}

enum class Call { InNode, Network, Apart };

// A slot's communicator for follower `f` and for `g` (`d` places before it in its node): all
// in their nodes, or across the network with each member of f's `d` places on from g's at the
// same place of the call, one member per node; anything else keeps f from being imaged.
Call communicator_call(const std::vector<int>& cf, const std::vector<int>& cg, int f, int g, int d, int gpus) {
  if (cf.size() != cg.size()) return Call::Apart;
  bool in_f = true, in_g = true;
  for (size_t i = 0; i < cf.size(); ++i) {
    in_f = in_f && cf[i] / gpus == f / gpus;
    in_g = in_g && cg[i] / gpus == g / gpus;
  }
  if (in_f && in_g) return Call::InNode;
  std::vector<int> nodes;
  for (size_t i = 0; i < cf.size(); ++i) {
    if (cf[i] != cg[i] + d || cf[i] / gpus != cg[i] / gpus) return Call::Apart;
    nodes.push_back(cf[i] / gpus);
  }
  std::sort(nodes.begin(), nodes.end());
  return std::adjacent_find(nodes.begin(), nodes.end()) == nodes.end() ? Call::Network : Call::Apart;
}

Call peer_call(int pf, int pg, int f, int g, int d, int gpus) {
  if (pf / gpus == f / gpus) return pg / gpus == g / gpus ? Call::InNode : Call::Apart;
  return pf == pg + d && pf / gpus == pg / gpus ? Call::Network : Call::Apart;
}

// Whether follower `f` can stand as an image of `g` (its source), each of its slots sorted into
// `out`'s; its partners across the network (members and peers) are checked afterwards.
bool candidate(const workloads::Job& job, const workloads::Replicas& replicas, int f, int g, int gpus,
               RailImages& out) {
  const int rf = replicas.representative[size_t(f)], rg = replicas.representative[size_t(g)];
  if (rf == f || !(rf == rg || rf == g)) return false;
  const workloads::Rank &a = job.ranks[size_t(f)], &b = job.ranks[size_t(g)];
  if (a.program != b.program || a.communicators.size() != b.communicators.size() || a.peers.size() != b.peers.size())
    return false;
  const int d = f - g;
  std::vector<bool> communicators(a.communicators.size(), false), peers(a.peers.size(), false);
  bool any = false;
  for (size_t k = 0; k < a.communicators.size(); ++k) {
    const Call c = communicator_call(job.communicators[size_t(a.communicators[k])].ranks,
                                     job.communicators[size_t(b.communicators[k])].ranks, f, g, d, gpus);
    if (c == Call::Apart) return false;
    communicators[k] = c == Call::Network;
    any = any || communicators[k];
  }
  for (size_t k = 0; k < a.peers.size(); ++k) {
    const Call c = a.peers[k] < 0 ? Call::InNode : peer_call(a.peers[k], b.peers[k], f, g, d, gpus);
    if (c == Call::Apart) return false;
    peers[k] = c == Call::Network;
    any = any || peers[k];
  }
  out.communicators[size_t(f)] = std::move(communicators);
  out.peers[size_t(f)] = std::move(peers);
  return any;
}

// Whether every partner of `f` across the network is imaged by the GPU at its place in `f`'s
// source's call. `calls`: per communicator, whether all its members are imaged alike (-1: not
// looked at yet; members imaged alike share their offset, so any member's answer is all's).
bool partners_imaged(const workloads::Job& job, const RailImages& in, int f, std::vector<int8_t>& calls) {
  const workloads::Rank& a = job.ranks[size_t(f)];
  const int d = f - in.source[size_t(f)];
  auto imaged = [&](int r) { return in.source[size_t(r)] >= 0 && r - in.source[size_t(r)] == d; };
  for (size_t k = 0; k < a.communicators.size(); ++k) {
    if (!in.communicators[size_t(f)][k]) continue;
    int8_t& all = calls[size_t(a.communicators[k])];
    if (all < 0) {
      const std::vector<int>& members = job.communicators[size_t(a.communicators[k])].ranks;
      all = std::all_of(members.begin(), members.end(), imaged) ? 1 : 0;
    }
    if (all == 0) return false;
  }
  for (size_t k = 0; k < a.peers.size(); ++k)
    if (in.peers[size_t(f)][k] && !imaged(a.peers[k])) return false;
  return true;
}

}  // namespace

RailImages find_rail_images(const platforms::Routing& routing, const models::PathProvider& paths,
                            const workloads::Job& job, const workloads::Replicas& replicas) {
  RailImages out;
  const size_t n = job.ranks.size();
  out.source.assign(n, -1);
  out.communicators.resize(n);
  out.peers.resize(n);
  const int gpus = int(routing.topology().node.gpus);
  if (gpus < 2 || replicas.representative.size() != n) return out;
  std::vector<int> places = place_sources(routing);
  const uint32_t nodes = uint32_t(n / size_t(gpus));
  PathCosts costs(paths);
  for (size_t t = 0; t < places.size(); ++t)
    if (places[t] >= 0 && !paths_alike(costs, uint32_t(gpus), nodes, uint32_t(places[t]), uint32_t(t))) places[t] = -1;
  for (size_t f = 0; f < n; ++f) {
    const int source = places[f % size_t(gpus)];
    if (source < 0) continue;
    const int g = int(f) - int(f % size_t(gpus)) + source;
    if (candidate(job, replicas, int(f), g, gpus, out)) out.source[f] = g;
  }
  // A follower whose partner is not imaged (alike) makes its calls as before; so then must the
  // partner's partners.
  std::vector<int8_t> calls;
  for (bool changed = true; changed;) {
    changed = false;
    calls.assign(job.communicators.size(), -1);  // (a pass's answers: the next pass asks again)
    for (size_t f = 0; f < n; ++f)
      if (out.source[f] >= 0 && !partners_imaged(job, out, int(f), calls)) {
        out.source[f] = -1;
        changed = true;
      }
  }
  for (size_t f = 0; f < n; ++f) {
    if (out.source[f] >= 0) {
      ++out.imaged;
      continue;
    }
    out.communicators[f].clear();
    out.peers[f].clear();
  }
  return out;
}

}  // namespace tessera::app
