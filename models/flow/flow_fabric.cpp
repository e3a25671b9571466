#include "models/flow/flow_fabric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "tlm/sockets.h"

namespace tessera::models {

namespace {

// Earlier time first, then earlier injection.
bool later(sc_dt::uint64 ta, uint64_t sa, sc_dt::uint64 tb, uint64_t sb) {
  return ta > tb || (ta == tb && sa > sb);
}

struct LaterArrival {
  template <typename Timed>
  bool operator()(const Timed& a, const Timed& b) const {
    return later(a.time, a.sequence, b.time, b.sequence);
  }
};

bool to_switch(protocol::TransferPurpose p) {
  return protocol::in_switch(p) || p == protocol::TransferPurpose::NetworkReduce;
}

[[noreturn]] void no_switches() {
  throw std::logic_error("in-switch reduction asked of a flow fabric whose paths have no switches that reduce");
}

}  // namespace

uint32_t PathProvider::path_to_switch(const protocol::FabricTransfer&, std::vector<uint32_t>&) const {
  no_switches();
}
void PathProvider::path_from_switch(uint32_t, const protocol::FabricTransfer&, std::vector<uint32_t>&) const {
  no_switches();
}
PathProvider::Leg PathProvider::leg(uint32_t id) const {
  throw std::logic_error("a path provider without legs asked for leg " + std::to_string(id));
}
uint32_t PathProvider::tree_device(uint32_t) const { no_switches(); }
uint32_t PathProvider::tree_hop(uint32_t, uint32_t, const protocol::FabricTransfer&, std::vector<uint32_t>&) const {
  no_switches();
}

FlowFabric::FlowFabric(sc_core::sc_module_name name, const PathProvider& paths, protocol::PayloadPool* pool)
    : sc_module(name), paths_(paths), pool_(pool) {
  tick_s_ = sc_core::sc_get_time_resolution().to_seconds();
  const uint32_t count = paths_.links();
  links_.resize(count);
  for (uint32_t id = 0; id < count; ++id) {
    links_[id].spec = paths_.link(id);
    links_[id].latency_s = (links_[id].spec.timing.latency + links_[id].spec.hop_latency).to_seconds();
    const double bandwidth = links_[id].spec.timing.bandwidth_bytes_per_s;
    if (!(bandwidth > 0.0))
      throw std::invalid_argument(std::string(this->name()) + ": link " + std::to_string(id) +
                                  " has bandwidth " + std::to_string(bandwidth) + " bytes/s");
  }
  // Links of one cost and latency share a class.
  std::map<std::tuple<double, uint32_t, uint32_t, sc_dt::uint64, sc_dt::uint64>, uint32_t> class_ids;
  starts_.resize(count);
  for (uint32_t id = 0; id < count; ++id) {
    const FlowLink& spec = links_[id].spec;
    const auto key = std::make_tuple(spec.timing.bandwidth_bytes_per_s, spec.timing.packet_overhead_bytes,
                                     spec.timing.max_packet_payload_bytes, spec.timing.latency.value(),
                                     spec.hop_latency.value());
    const auto [it, fresh] = class_ids.emplace(key, uint32_t(classes_.size()));
    if (fresh) classes_.push_back(LinkClass{spec.timing, spec.timing.latency + spec.hop_latency, links_[id].latency_s});
    starts_[id].link_class = it->second;
  }
  protocol::spawn_method("update", &wake_, [this] { update(); });
  protocol::spawn_method("deliver", &arrival_, [this] { deliver(); });
}

void FlowFabric::forbid(std::vector<bool> links, std::function<void(uint32_t)> crossed) {
  forbidden_ = std::move(links);
  forbidden_.resize(links_.size(), false);
  crossed_ = std::move(crossed);
  for (uint32_t id = 0; id < legs_.size(); ++id) {  // legs made before: whether they cross one
    if (legs_[id].ready) legs_[id].forbidden = crosses_forbidden(paths_.leg(id));
  }
}

bool FlowFabric::crosses_forbidden(const PathProvider::Leg& leg) const {
  bool crosses = false;
  if (!forbidden_.empty()) leg.each([&](uint32_t l, double) { crosses = crosses || forbidden_[l]; });
  return crosses;
}

void FlowFabric::never_fill(std::vector<bool> links) {
  if (started_ > 0) throw std::logic_error(std::string(name()) + ": links set never to fill after flows started");
  never_fill_ = std::move(links);
  never_fill_.resize(links_.size(), false);
  never_filling_ = size_t(std::count(never_fill_.begin(), never_fill_.end(), true));
  if (never_filling_ == 0) never_fill_.clear();
}

void FlowFabric::attach(uint32_t rank, FlowSink& sink) {
  if (sinks_.size() <= rank) sinks_.resize(rank + 1, nullptr);
  sinks_[rank] = &sink;
}

sc_dt::uint64 FlowFabric::ticks(double seconds) const {
  // Round up to the time resolution, forgiving the last bits of floating-point error so that
  // a closed form that is a whole number of ticks stays one.
  const double x = seconds / tick_s_;
  const double limit = double(std::numeric_limits<sc_dt::uint64>::max() / 4);
  if (!(x < limit)) return static_cast<sc_dt::uint64>(limit);
  const double rounded = std::ceil(x * (1.0 - 1e-12) - 1e-6);
  return rounded > 0.0 ? static_cast<sc_dt::uint64>(rounded) : 0;
}

void FlowFabric::inject(tlm::tlm_generic_payload& gp, PacketSource& source) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.destination >= sinks_.size() || sinks_[t.destination] == nullptr)
    throw std::runtime_error(std::string(name()) + ": no GPU attached for rank " +
                             std::to_string(t.destination) + " (chunk from rank " +
                             std::to_string(t.source) + ")");
  if (gp.has_mm()) gp.acquire();
  // A contribution to an in-switch or in-network reduction, or a multicast, ends at its switch.
  uint32_t end = kNone;
  uint32_t leg = PathProvider::kNoLeg;
  if (to_switch(t.purpose)) end = paths_.path_to_switch(t, path_);
  else leg = paths_.path_with_leg(t, path_, shares_);
  start(gp, source, end, end != kNone, leg);
}

FlowFabric::LegState& FlowFabric::leg_state(uint32_t id) {
  if (legs_.size() <= id) legs_.resize(size_t(id) + 1);
  LegState& leg = legs_[id];
  if (leg.ready) return leg;
  const PathProvider::Leg links = paths_.leg(id);
  sc_core::sc_time latency = sc_core::SC_ZERO_TIME;
  leg.links = links.count;
  leg.forbidden = crosses_forbidden(links);
  links.each([&](uint32_t l, double share) {
    const LinkState& link = links_.at(l);
    if (share == 1.0) latency += link.spec.timing.latency + link.spec.hop_latency;
    else leg.spread_latency_s += share * link.latency_s;
    if (never_fill_.empty() || !never_fill_[l]) leg.hops.push_back(LegHop{l, kNone, share, link.spec.timing});
    if (std::none_of(leg.timings.begin(), leg.timings.end(),
                     [&](const LegTiming& t) { return t.timing.same_cost(link.spec.timing); }))
      leg.timings.push_back(LegTiming{link.spec.timing, 0});
  });
  leg.latency = latency.value();
  leg.ready = true;
  return leg;
}

sc_dt::uint64 FlowFabric::busy_share(sc_dt::uint64 busy, double share) {
  return share == 1.0 ? busy : static_cast<sc_dt::uint64>(static_cast<double>(busy) * share + 0.5);
}

// What the flow of `t` (`size` bytes on the wire's scale) costs each link of its path: the
// allocator's hops and weights (hop_links_, hop_weights_), and the path's latency, of the links
// it crosses whole and, in seconds, the mean over those it spreads over.
FlowFabric::PathLatency FlowFabric::hops(const protocol::FabricTransfer& t, double size, uint32_t leg_id) {
  PathLatency latency;
  hop_links_.clear();
  hop_weights_.clear();
  bool left_out = false;
  const protocol::LinkTiming* last = nullptr;  // a spread path's links mostly cost alike
  double wire = 0.0;
  // `id`: the link's id in the allocator where the caller keeps it (kNone: not known there yet).
  auto hop = [&](uint32_t l, double share, const protocol::LinkTiming& timing, uint32_t& id) {
    if (last == nullptr || !timing.same_cost(*last)) {
      last = &timing;
      wire = timing.wire_bytes(t.bytes) * t.wire_factor;
    }
    if (size == 0.0 || wire == 0.0) return;  // costs this link nothing
    if (id == kNone) {
      uint32_t& given = starts_[l].allocator_id;
      if (given == kNone) given = share_.add_link(timing.bandwidth_bytes_per_s);
      id = given;
    }
    hop_links_.push_back(id);
    hop_weights_.push_back(share * wire / size);
  };
  for (size_t i = 0; i < path_.size(); ++i) {
    const uint32_t l = path_[i];
    if (!forbidden_.empty() && forbidden_[l]) crossed_(l);
    LinkStart& start = starts_.at(l);
    const LinkClass& kind = classes_[start.link_class];
    const double share = PathProvider::share(shares_, i);
    // Spread over equal-cost paths: the mean of their latencies.
    if (share == 1.0) latency.whole += kind.latency;
    else latency.spread_s += share * kind.latency_s;
    if (!never_fill_.empty() && never_fill_[l]) left_out = true;
    else {
      hop(l, share, kind.timing, start.allocator_id);
      if (!rail_use_.empty()) rail_link_used(l, false);
    }
  }
  if (leg_id != PathProvider::kNoLeg) {
    LegState& leg = leg_state(leg_id);
    latency.whole += sc_core::sc_time::from_value(leg.latency);
    latency.spread_s += leg.spread_latency_s;
    if (leg.forbidden)
      paths_.leg(leg_id).each([&](uint32_t l, double) {
        if (forbidden_[l]) crossed_(l);
      });
    left_out |= leg.hops.size() < leg.links;
    for (LegHop& h : leg.hops) hop(h.link, h.share, h.timing, h.allocator_id);
    if (!rail_use_.empty())
      for (const LegHop& h : leg.hops) rail_link_used(h.link, false);
  }
  if (left_out && hop_links_.empty())
    throw std::logic_error(std::string(name()) + ": a flow crossing only links that never fill (from rank " +
                           std::to_string(t.source) + " to " + std::to_string(t.destination) + ")");
  return latency;
}

// A transfer standing for several steps in series (flow fidelity's steady state) arrives no
// earlier than its latency chain: each step's path latency and handshake (the engine adds the
// last handshake itself). A window into or out of a reducing switch (steps 1) stands for packet
// fidelity's chunks streaming through the path: it arrives no earlier than its first chunk
// stored and forwarded on every link, the pipeline's fill. So does a tree's tail
// (FabricTransfer::stored_and_forwarded: packet fidelity's last chunk, level by level).
sc_dt::uint64 FlowFabric::earliest_arrival(const protocol::FabricTransfer& t, const Flow& f, bool via_switch) const {
  if (t.steps <= 1 && !((via_switch || t.stored_and_forwarded) && t.step_chunk_bytes > 0)) return f.since;
  // Per step: the chunk it forwards, stored and forwarded on every link of the path (as packet
  // fidelity's ports do), the path's latency and the handshake.
  double chunk = 0.0;
  for (size_t i = 0; i < path_.size(); ++i)
    chunk += chunk_ps(path_[i], PathProvider::share(shares_, i), t.step_chunk_bytes, t.wire_factor);
  if (f.leg != PathProvider::kNoLeg) {
    double on_leg = 0.0;
    paths_.leg(f.leg).each(
        [&](uint32_t l, double share) { on_leg += chunk_ps(l, share, t.step_chunk_bytes, t.wire_factor); });
    chunk += on_leg;
  }
  const sc_dt::uint64 step = f.latency + t.step_latency + static_cast<sc_dt::uint64>(std::llround(chunk));
  return f.since + step * t.steps - t.step_latency;
}

void FlowFabric::start(tlm::tlm_generic_payload& gp, PacketSource& source, uint32_t to_switch, bool via_switch,
                       uint32_t leg_id) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  double size = double(t.bytes);
  if (t.bytes == 0) {  // a header-only transfer: its size is its largest wire footprint
    size = 0.0;
    for (uint32_t l : path_) size = std::max(size, header_bytes(l));
    if (leg_id != PathProvider::kNoLeg)
      paths_.leg(leg_id).each([&](uint32_t l, double) { size = std::max(size, header_bytes(l)); });
  }
  const PathLatency latency = hops(t, size, leg_id);
  const uint32_t id = share_.add(hop_links_.data(), hop_weights_.data(), hop_links_.size(), t.rate_cap);
  if (flows_.size() <= id) flows_.resize(id + 1);
  Flow& f = flows_[id];
  f.path.assign(path_.begin(), path_.end());
  f.shares.assign(shares_.begin(), shares_.end());
  f.leg = leg_id;
  f.gp = &gp;
  f.source = &source;
  f.remaining = size;
  f.rate = 0.0;
  f.since = sc_core::sc_time_stamp().value();
  f.latency = latency.whole.value() + (latency.spread_s > 0.0 ? ticks(latency.spread_s) : 0);
  f.earliest = earliest_arrival(t, f, via_switch);
  shares_.clear();
  f.sequence = sequence_++;
  f.heap_slot = kNone;
  f.to_switch = to_switch;
  if (hop_links_.empty()) completion_set(id, f.since);  // nothing to share: sent at once
  ++started_;
  if (!updating_) wake_.notify(sc_core::SC_ZERO_TIME);  // every flow of this delta, one update
}

void FlowFabric::settle(uint32_t id, sc_dt::uint64 now) {
  Flow& f = flows_[id];
  if (std::isinf(f.rate)) f.remaining = 0.0;
  else f.remaining = std::max(0.0, f.remaining - f.rate * double(now - f.since) * tick_s_);
  f.since = now;
}

void FlowFabric::update() {
  const sc_dt::uint64 now = sc_core::sc_time_stamp().value();
  updating_ = true;
  for (;;) {
    // Flows whose last byte has been sent, in (time, injection) order.
    done_.clear();
    while (!completions_.empty() && completions_.front().time <= now) {
      const uint32_t id = completions_.front().id;
      completion_erase(id);
      done_.push_back(id);
    }
    left_.clear();
    for (uint32_t id : done_) finish(id, now);
    // The senders learn after the fabric's state is whole again: they may inject at once.
    for (const auto& [gp, source] : left_) source->packet_left(*gp);
    if (!share_.pending()) {
      if (done_.empty()) break;
      continue;
    }
    // New rates for the flows connected to what changed; their finish times move.
    for (uint32_t id : share_.recompute()) {
      Flow& f = flows_[id];
      const double rate = share_.rate(id);
      if (rate == f.rate && f.heap_slot != kNone) continue;  // its finish time stands
      settle(id, now);
      f.rate = rate;
      const sc_dt::uint64 left =
          (f.remaining <= 0.0 || std::isinf(f.rate)) ? 0 : ticks(f.remaining / f.rate);
      completion_set(id, now + left);
    }
  }
  updating_ = false;
  wake_.cancel();
  if (!completions_.empty())
    wake_.notify(sc_core::sc_time::from_value(completions_.front().time - now));
}

void FlowFabric::finish(uint32_t id, sc_dt::uint64 now) {
  Flow& f = flows_[id];
  const protocol::FabricTransfer& t = protocol::fabric_transfer(*f.gp);
  carried(f.path, f.shares, t.bytes, t.wire_factor);
  if (f.leg != PathProvider::kNoLeg) leg_carried(f.leg, t.bytes, t.wire_factor);
  if (t.echo) images_carried(t, f.to_switch != kNone);
  if (!image_offsets_.empty()) rail_images_carried(t, f);
  const uint32_t gpu = t.receiver();  // (a ring's echo: as what the member before it sent)
  const Timed arrival{std::max(now + f.latency, f.earliest), f.sequence, f.gp,
                      f.to_switch == kNone ? gpu : f.to_switch, f.to_switch};
  const bool first = arrivals_.empty() || later(arrivals_.front().time, arrivals_.front().sequence,
                                                arrival.time, arrival.sequence);
  arrivals_.push_back(arrival);
  std::push_heap(arrivals_.begin(), arrivals_.end(), LaterArrival{});
  if (first) arrival_.notify(sc_core::sc_time::from_value(arrival.time - now));
  left_.emplace_back(f.gp, f.source);
  f.gp = nullptr;
  f.source = nullptr;
  share_.remove(id);
  ++finished_;
}

void FlowFabric::carried(const std::vector<uint32_t>& path, const std::vector<double>& shares, uint64_t bytes,
                         float wire_factor) {
  LinkCost cost;
  carried(path, shares, bytes, wire_factor, cost);
}

void FlowFabric::carried(const std::vector<uint32_t>& path, const std::vector<double>& shares, uint64_t bytes,
                         float wire_factor, LinkCost& cost) {
  const protocol::LinkTiming*& last = cost.timing;  // a spread path's links mostly cost alike
  sc_dt::uint64& busy = cost.busy;
  for (size_t i = 0; i < path.size(); ++i) {
    LinkState& link = links_[path[i]];
    const double share = PathProvider::share(shares, i);
    link.bytes += share * double(bytes);
    link.chunks += share;
    // LinkTiming::serialization, and sc_time's product with a share, in the time's own value.
    if (last == nullptr || !link.spec.timing.same_cost(*last)) {
      last = &link.spec.timing;
      busy = last->serialization_ps(bytes, wire_factor);
    }
    link.busy += busy_share(busy, share);
  }
}

void FlowFabric::leg_carried(uint32_t id, uint64_t bytes, float wire_factor) {
  LegState& leg = legs_[id];
  if (leg.chunks == 0.0) legs_unfolded_.push_back(id);
  leg.bytes += double(bytes);
  leg.chunks += 1.0;
  for (LegTiming& k : leg.timings) k.busy += k.timing.serialization_ps(bytes, wire_factor);
}

// A leg's figures on each of its links: its share of the bytes and chunks, and of the busy time
// of its links' timing (rounded once per link, where carried() rounds once per flow). Only the
// legs that carried since the last fold, in the order of their ids (so the sums are the same
// whenever a reader asks).
void FlowFabric::fold_legs() const {
  std::sort(legs_unfolded_.begin(), legs_unfolded_.end());
  for (uint32_t id : legs_unfolded_) {
    LegState& leg = legs_[id];
    paths_.leg(id).each([&](uint32_t l, double share) {
      LinkState& link = links_[l];
      const sc_dt::uint64 busy = leg.timing_of(link).busy;
      link.bytes += share * leg.bytes;
      link.chunks += share * leg.chunks;
      link.busy += busy_share(busy, share);
    });
    leg.bytes = leg.chunks = 0.0;
    for (LegTiming& k : leg.timings) k.busy = 0;
  }
  legs_unfolded_.clear();
}

const FlowFabric::LinkState& FlowFabric::counted(uint32_t link) const {
  if (!legs_unfolded_.empty()) fold_legs();
  return links_[link];
}

void FlowFabric::images_carried(const protocol::FabricTransfer& t, bool into_switch) {
  const uint32_t n = t.member_count;
  const uint32_t from = member_place(t, t.source), to = member_place(t, t.destination);
  const bool switched = to_switch(t.purpose);
  protocol::FabricTransfer image = t;
  LinkCost cost;  // (the images cross links like each other's)
  for (uint32_t k = 1; k < n; ++k) {
    image.source = uint32_t(t.members[(from + k) % n]);
    image.destination = uint32_t(t.members[(to + k) % n]);
    image_shares_.clear();
    if (!switched) paths_.path(image, image_path_, image_shares_);
    else if (into_switch) paths_.path_to_switch(image, image_path_);
    else paths_.path_from_switch(sum_switch(image), image, image_path_);
    carried(image_path_, image_shares_, t.bytes, t.wire_factor, cost);
  }
}

void FlowFabric::deliver() {
  const sc_dt::uint64 now = sc_core::sc_time_stamp().value();
  while (!arrivals_.empty() && arrivals_.front().time <= now) {
    std::pop_heap(arrivals_.begin(), arrivals_.end(), LaterArrival{});
    const Timed arrival = arrivals_.back();
    arrivals_.pop_back();
    if (arrival.to_switch != kNone) {
      at_switch(arrival.to_switch, *arrival.gp);
      continue;
    }
    ++delivered_;
    sinks_[arrival.id]->flow_arrived(arrival.id, *arrival.gp);
    if (arrival.gp->has_mm()) arrival.gp->release();
  }
  if (!arrivals_.empty())
    arrival_.notify(sc_core::sc_time::from_value(arrivals_.front().time - now));
}

// A contribution added into a sum, or a chunk copied, is gone: the sender's reference and the
// fabric's.
void FlowFabric::absorb(tlm::tlm_generic_payload& gp) {
  if (!gp.has_mm()) return;
  gp.release();
  gp.release();
}

ReductionUnit& FlowFabric::unit(uint32_t id) {
  if (units_.size() <= id) {
    if (id >= paths_.switches())
      throw std::logic_error(std::string(name()) + ": a flow ended at switch " + std::to_string(id) + " of " +
                             std::to_string(paths_.switches()));
    units_.resize(size_t(id) + 1, ReductionUnit(pool_));
  }
  return units_[id];
}

// What the switch modules do in packet fidelity (NvSwitch::reduce and multicast,
// NetworkSwitch::aggregate and spread), with flows for the chunks that leave the switch.
void FlowFabric::at_switch(uint32_t id, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  ReductionUnit& u = unit(id);
  switch (t.purpose) {
    case protocol::TransferPurpose::SwitchReduce:
      if (t.echo) return echo_reduced(id, gp);
      if (!u.contribute(t.flow, ReductionUnit::switch_part(t), t.member_count)) return absorb(gp);
      // The last contribution's payload carries the sum to the owner.
      ++reductions_;
      paths_.path_from_switch(id, t, path_);
      return start(gp, u, kNone, true);
    case protocol::TransferPurpose::SwitchMulticast: {
      if (t.echo) return echo_multicast(id, gp);
      const auto [copy, length] = multicast_arrived(u, gp, 1);
      for (uint32_t m = 0; m < copy.member_count; ++m) {
        tlm::tlm_generic_payload& c = u.copy(copy, length);  // the copy's own reference
        c.acquire();                                         // and the fabric's
        protocol::fabric_transfer(c).destination = static_cast<uint32_t>(copy.members[m]);
        paths_.path_from_switch(id, protocol::fabric_transfer(c), path_);
        start(c, u, kNone, true);
      }
      return;
    }
    case protocol::TransferPurpose::NetworkReduce: {
      const auto& v = ReductionUnit::vertex(t, paths_.tree_device(id), name());
      if (!u.contribute(t.flow, ReductionUnit::tree_part(t), v.contributions)) return absorb(gp);
      ++reductions_;
      if (v.parent_port < 0) return spread(id, gp);  // the root: the sum goes down the tree
      const uint32_t parent = paths_.tree_hop(id, static_cast<uint32_t>(v.parent_port), t, path_);
      return start(gp, u, parent, true);  // the partial sum climbs
    }
    case protocol::TransferPurpose::NetworkMulticast: return spread(id, gp);
    default:
      throw std::logic_error(std::string(name()) + ": a chunk that is neither reduced nor copied ended at a switch");
  }
}

// An echo node's in-switch reduction (CollectiveEngine::echo): every member sends each owner's
// shard over links like the simulated GPU's own (the switches' ports alike, the same hashed
// choice of switch for each owner), so every member's contribution to its shard arrives when
// its own does. That one completes the sum; its transfers of the others' shards stand for the
// others' to their owners, whose sums nobody simulated waits for.
void FlowFabric::echo_reduced(uint32_t id, tlm::tlm_generic_payload& gp) {
  const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
  if (t.destination != t.source) return absorb(gp);
  reductions_ += t.member_count;
  paths_.path_from_switch(id, t, path_);
  start(gp, unit(id), kNone, true);
}

// An echo node's multicast: the simulated GPU receives every owner's sum as each member receives
// its own, from the switch the owner's multicast reaches, at once. The copy for the member k
// places after it stands for what it receives from the owner k places before it (the image of
// that copy, turned by k), so each copy comes to it from that owner's switch.
void FlowFabric::echo_multicast(uint32_t id, tlm::tlm_generic_payload& gp) {
  ReductionUnit& u = unit(id);
  const auto [copy, length] = multicast_arrived(u, gp, protocol::fabric_transfer(gp).member_count);
  const uint32_t n = copy.member_count, self = member_place(copy, copy.source);
  for (uint32_t k = 0; k < n; ++k) {
    tlm::tlm_generic_payload& c = u.copy(copy, length);  // the copy's own reference
    c.acquire();                                         // and the fabric's
    protocol::FabricTransfer& ct = protocol::fabric_transfer(c);
    ct.source = uint32_t(copy.members[(self + n - k) % n]);  // the owner it stands for
    const uint32_t from = k == 0 ? id : sum_switch(ct);
    paths_.path_from_switch(from, ct, path_);
    start(c, u, kNone, true);
  }
}

uint32_t FlowFabric::member_place(const protocol::FabricTransfer& t, uint32_t rank) const {
  const int* members = t.members;
  const uint32_t place = uint32_t(std::find(members, members + t.member_count, int(rank)) - members);
  if (place == t.member_count) throw std::logic_error(std::string(name()) + ": an echo between ranks outside its communicator");
  return place;
}

// The switch that reduces or multicasts the shard of the owner of an echo's leg out of a switch
// (a sum goes to its owner, a copy comes from its owner): where that owner's own chunk goes.
uint32_t FlowFabric::sum_switch(const protocol::FabricTransfer& t) {
  protocol::FabricTransfer own = t;
  own.source = own.destination = t.purpose == protocol::TransferPurpose::SwitchReduce ? t.destination : t.source;
  return paths_.path_to_switch(own, switch_path_);
}

FlowFabric::Multicast FlowFabric::multicast_arrived(ReductionUnit& u, tlm::tlm_generic_payload& gp, uint32_t counted) {
  const Multicast arrived{protocol::fabric_transfer(gp), gp.get_data_length()};
  absorb(gp);
  u.multicast_done();
  multicasts_ += counted;
  return arrived;
}

void FlowFabric::spread(uint32_t id, tlm::tlm_generic_payload& gp) {
  ReductionUnit& u = unit(id);
  const auto [t, length] = multicast_arrived(u, gp, 1);
  const auto& v = ReductionUnit::vertex(t, paths_.tree_device(id), name());
  for (uint32_t k = v.first_child; k < v.first_child + v.children; ++k) {
    const protocol::AggregationTree::Child& child = t.tree->down[k];
    tlm::tlm_generic_payload& copy = u.copy_down(t, length, child);  // the copy's own reference
    copy.acquire();                                                   // and the fabric's
    const uint32_t next = paths_.tree_hop(id, child.port, protocol::fabric_transfer(copy), path_);
    start(copy, u, child.rank >= 0 ? kNone : next, true);
  }
}

// The completion heap: flows_[id].heap_slot is the entry's index, kNone when absent.
void FlowFabric::completion_set(uint32_t id, sc_dt::uint64 time) {
  Flow& f = flows_[id];
  if (f.heap_slot == kNone) {
    f.heap_slot = static_cast<uint32_t>(completions_.size());
    completions_.push_back(Timed{time, f.sequence, nullptr, id, kNone});
    completion_up(f.heap_slot);
    return;
  }
  const size_t slot = f.heap_slot;
  completions_[slot].time = time;
  completion_up(slot);
  completion_down(flows_[id].heap_slot);
}

void FlowFabric::completion_erase(uint32_t id) {
  const size_t slot = flows_[id].heap_slot;
  flows_[id].heap_slot = kNone;
  const size_t last = completions_.size() - 1;
  if (slot != last) {
    const uint32_t moved = completions_[last].id;
    completions_[slot] = completions_[last];
    completions_.pop_back();
    flows_[moved].heap_slot = static_cast<uint32_t>(slot);
    completion_up(slot);
    completion_down(flows_[moved].heap_slot);
  } else {
    completions_.pop_back();
  }
}

void FlowFabric::completion_up(size_t slot) {
  while (slot > 0) {
    const size_t parent = (slot - 1) / 2;
    Timed& a = completions_[slot];
    Timed& b = completions_[parent];
    if (!later(b.time, b.sequence, a.time, a.sequence)) break;
    std::swap(a, b);
    flows_[completions_[slot].id].heap_slot = static_cast<uint32_t>(slot);
    flows_[completions_[parent].id].heap_slot = static_cast<uint32_t>(parent);
    slot = parent;
  }
}

void FlowFabric::completion_down(size_t slot) {
  const size_t n = completions_.size();
  for (;;) {
    size_t best = slot;
    for (size_t child = 2 * slot + 1; child <= 2 * slot + 2 && child < n; ++child) {
      const Timed& c = completions_[child];
      const Timed& b = completions_[best];
      if (later(b.time, b.sequence, c.time, c.sequence)) best = child;
    }
    if (best == slot) return;
    std::swap(completions_[slot], completions_[best]);
    flows_[completions_[slot].id].heap_slot = static_cast<uint32_t>(slot);
    flows_[completions_[best].id].heap_slot = static_cast<uint32_t>(best);
    slot = best;
  }
}

}  // namespace tessera::models
