// The flow-mode fabric: a transfer is one flow from its source GPU to its destination GPU, with
// no per-hop transaction. Flows share links max-min fairly (models/flow/max_min.h); rates are
// re-solved when a flow starts or ends, and one method process wakes at the next completion.
//
// A transfer's life, for a chunk payload carrying a protocol::FabricTransfer extension:
//   inject(gp, source)   the path comes from the PathProvider; the flow starts in the same
//                        delta cycle's rate update (every flow injected in one delta shares it).
//   last byte sent       at start + the integral of its rate: source.packet_left(gp), so the
//                        sender may inject more.
//   arrival              the path latency later (the links' latencies plus the hop latency of
//                        every node the path crosses): sink.flow_arrived(destination, gp).
//                        A transfer that stands for several steps in series (FabricTransfer::
//                        steps) arrives no earlier than that many path latencies and step
//                        latencies after it started.
//
// In-switch and in-network reduction (NVLS, InfiniBand SHARP): a SwitchReduce, SwitchMulticast
// or NetworkReduce chunk's flow ends at the switch that reduces or copies it, as the packet
// fidelity's NvSwitch and NetworkSwitch modules do: a ReductionUnit per switch counts the
// members' contributions to each chunk (nothing allocated per chunk in steady state), and the
// sum leaves as one flow (to its owner, or up the aggregation tree to the parent switch); a
// multicast leaves as one flow per member (or per child of the tree), copies from the pool.
// So a GPU's link into the switch carries each contribution once and its link out of the
// switch each sum or copy once, the bytes packet fidelity puts on them.
//
// Wire bytes: on each link a flow of P payload bytes occupies LinkTiming::wire_bytes(P) of that
// link's bandwidth (the packet overhead of that link's framing), so its rate on link l costs
// wire_bytes_l(P)/P of the link's capacity per payload byte/s. The allocator works in payload
// bytes/s with those per-hop weights; the fairness is in payload bytes.
//
// Network legs and links that never fill (docs/fidelity.md): a path's network leg, spread over
// dozens of equal-cost links, is named by the provider (path_with_leg) and kept once here
// (LegState): its latency, the links of it the allocator sees, and its finished flows' figures,
// added to its links' counters when they are read. Links the platform proves can never fill
// (never_fill) are left out of the allocator: the rates are the same without them. The allocator
// holds a link from the first flow that crosses it on (ids in that order): a large platform's
// links inside quiet nodes and between switches never reach it, and the links of one flow sit
// side by side in its arrays.
//
// Wiring, done by the platform builder:
//   FlowFabric fabric("fabric", provider);    // provider outlives the fabric
//   fabric.attach(rank, engine);              // for every rank: its collective engine (a FlowSink)
//   gpu.set_flow_fabric(fabric);              // its engine injects into fabric.inject(gp, source)
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <systemc>

#include "models/collectives/collective_engine.h"
#include "models/flow/max_min.h"
#include "models/link/fabric_port.h"
#include "models/switch/reduction_unit.h"
#include "tlm/extensions.h"
#include "tlm/link_timing.h"
#include "tlm/payload_pool.h"

namespace tessera::models {

// One direction of a link as the flow fabric sees it.
struct FlowLink {
  protocol::LinkTiming timing;          // bandwidth per direction, latency, packet overhead
  // Pipeline latency of the node the link leaves (a switch's crossbar; zero for a GPU), added
  // once per flow crossing the link, as EgressPort::set_hop_latency does in packet mode.
  sc_core::sc_time hop_latency = sc_core::SC_ZERO_TIME;
};

// The routes of the platform, implemented by the platform builder. Link ids are 0..links()-1;
// the fabric reads every link once, at construction.
class PathProvider {
 public:
  virtual ~PathProvider() = default;
  virtual uint32_t links() const = 0;
  virtual FlowLink link(uint32_t id) const = 0;
  // Replaces `links` with the directed links the transfer crosses from t.source to
  // t.destination, each at most once, and `shares` with the part of the transfer's bytes each
  // carries (a transfer spread over equal-cost paths; the shares of each stage of the path add
  // up to one), or leaves `shares` empty: every link carries all of it. Empty `links`: a
  // transfer that crosses no link (delivered at once).
  virtual void path(const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
                    std::vector<double>& shares) const = 0;
  // Link i's share of a path's bytes, as path() gives them.
  static double share(const std::vector<double>& shares, size_t i) { return shares.empty() ? 1.0 : shares[i]; }

  // The same path with its network leg named instead of listed, where the provider keeps legs
  // (every transfer between the same two network gateways takes the same one): `links` gets the
  // links before and after the leg, whole, and the call returns the leg's id (0, 1, ... dense).
  // Where it keeps none it is path() and returns kNoLeg.
  virtual uint32_t path_with_leg(const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
                                 std::vector<double>& shares) const {
    path(t, links, shares);
    return kNoLeg;
  }
  // Leg `id`'s links and their shares, in pieces (a provider may store a run of links that
  // many legs cross once): piece p's are [first, first + count) of `links` and `shares`; `count`
  // links in all. Valid until the next call of path() or path_with_leg().
  struct Leg {
    struct Piece {
      uint32_t first = 0, count = 0;
    };
    const uint32_t* links = nullptr;
    const double* shares = nullptr;
    const Piece* pieces = nullptr;
    uint32_t piece_count = 0;
    uint32_t count = 0;
    // Calls visit(link, share) for each link, in order.
    template <typename Visit>
    void each(Visit&& visit) const {
      for (const Piece* p = pieces; p != pieces + piece_count; ++p)
        for (uint32_t i = p->first; i < p->first + p->count; ++i) visit(links[i], shares[i]);
    }
  };
  virtual Leg leg(uint32_t id) const;
  static constexpr uint32_t kNoLeg = ~0u;

  // Switches that reduce (flows that end or start at a switch), ids 0 .. switches() - 1. A
  // fabric without them keeps the defaults: no switch, and a chunk that asks for one is an error.
  virtual uint32_t switches() const { return 0; }
  // Replaces `links` with the links from GPU t.source to the switch that reduces or copies t
  // (SwitchReduce, SwitchMulticast: the GPU's NVSwitch; NetworkReduce: its leaf of t.tree);
  // returns that switch.
  virtual uint32_t path_to_switch(const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const;
  // Replaces `links` with the links from switch `from` to GPU t.destination.
  virtual void path_from_switch(uint32_t from, const protocol::FabricTransfer& t,
                                std::vector<uint32_t>& links) const;
  // Aggregation trees (tlm/aggregation_tree.h) name a network switch by its device index and
  // its ports: the device of switch `id`; and the link leaving switch `from` through `port`,
  // returning the switch at its other end, or kNoSwitch for a member's network port, where
  // `links` goes on to GPU t.destination.
  virtual uint32_t tree_device(uint32_t id) const;
  virtual uint32_t tree_hop(uint32_t from, uint32_t port, const protocol::FabricTransfer& t,
                            std::vector<uint32_t>& links) const;
  static constexpr uint32_t kNoSwitch = ~0u;
};

class FlowFabric : public sc_core::sc_module, public FabricInjector {
 public:
  // `pool`: where multicast copies come from (needed only when switches reduce).
  FlowFabric(sc_core::sc_module_name name, const PathProvider& paths, protocol::PayloadPool* pool = nullptr);

  // The sink of every chunk whose destination is `rank`.
  void attach(uint32_t rank, FlowSink& sink);

  // Starts a flow for the chunk `gp` (FabricTransfer extension). The fabric holds a reference
  // to a pooled payload from here until it has handed the chunk to the sink.
  void inject(tlm::tlm_generic_payload& gp, PacketSource& source) override;

  // Links no flow may cross (a symmetric run's quiet nodes' links between their GPUs, whose
  // calls were left out): `crossed(link)` is called for each flow that does, at its start.
  void forbid(std::vector<bool> links, std::function<void(uint32_t link)> crossed);
  // Lifts forbid() from `link` (the quiet node it is in parted: its GPUs' calls are simulated).
  void allow(uint32_t link) {
    if (link < forbidden_.size()) forbidden_[link] = false;
  }

  // Rail images (SymmetricRun, docs/fidelity.md "Rail images"): per rank, the rank whose
  // transfers stand for its own (-1: none). Every transfer of a source that leaves its node (of
  // `gpus_per_node` GPUs) stands for the same transfer of each rank it images, as many GPUs on
  // at both ends, whose own calls were left out: the fabric counts the image on its own path (its
  // links' bytes, chunks and busy time, its GPUs' bytes sent and received) when the transfer
  // finishes. That holds where nothing else shares what the images cross: a link an image
  // crosses that can fill carries no flow, and its path costs link by link what the transfer's
  // does. `broken(why, link)` is called where it does not (the link concerned, or kNoLink; the
  // run is then made without symmetry).
  static constexpr uint32_t kNoLink = ~0u;
  void image(const std::vector<int>& sources, uint32_t gpus_per_node,
             std::function<void(const std::string&, uint32_t)> broken);
  uint64_t image_bytes_sent(uint32_t rank) const { return rank < image_sent_.size() ? image_sent_[rank] : 0; }
  uint64_t image_bytes_received(uint32_t rank) const {
    return rank < image_received_.size() ? image_received_[rank] : 0;
  }

  // Links that no allocation can fill (the platform proves it: Routing::links_that_cannot_fill):
  // the allocator solves rates without them (the same rates: a constraint that the allocation
  // without it already meets changes nothing), and they keep their counters. Before any flow.
  void never_fill(std::vector<bool> links);
  size_t links_never_filling() const { return never_filling_; }

  // Per link, like models/link/link.h: payload bytes and chunks of the flows that finished on
  // the link, and busy time (the sum of the serialization times of their wire bytes at the
  // link's full bandwidth, so busy / elapsed is the utilization).
  uint32_t links() const { return static_cast<uint32_t>(links_.size()); }
  const FlowLink& link(uint32_t id) const { return links_[id].spec; }
  uint64_t bytes_carried(uint32_t link) const { return static_cast<uint64_t>(std::llround(counted(link).bytes)); }
  uint64_t chunks_carried(uint32_t link) const { return static_cast<uint64_t>(std::llround(counted(link).chunks)); }
  sc_core::sc_time busy_time(uint32_t link) const { return sc_core::sc_time::from_value(counted(link).busy); }

  // Counters: flows started, flows whose last byte was sent, chunks delivered, rate updates.
  uint64_t flows_started() const { return started_; }
  uint64_t flows_finished() const { return finished_; }
  uint64_t flows_delivered() const { return delivered_; }
  uint64_t rate_updates() const { return share_.recomputations(); }
  size_t active_flows() const { return share_.active(); }
  size_t in_flight() const { return arrivals_.size(); }
  // In-switch and in-network reduction: sums made and chunks multicast, over every switch.
  uint64_t reductions() const { return reductions_; }
  uint64_t multicasts() const { return multicasts_; }
  const MaxMinFairShare& share() const { return share_; }

 private:
  struct alignas(64) LinkState {  // one cache line: a spread flow reads and counts dozens
    FlowLink spec;
    double latency_s = 0.0;  // spec's latency and hop latency, seconds
    double bytes = 0.0;   // fractional where flows spread over equal-cost links
    double chunks = 0.0;
    sc_dt::uint64 busy = 0;  // sc_time value
  };
  // What a flow's start reads of each link of its path, a few bytes per link (the links' whole
  // records are read again only when the flow ends): its class (cost and latency: a network has a
  // few kinds of link, each kept once in `classes_`), and its id in the allocator, given when a
  // flow first crosses it (kNone before).
  struct LinkClass {
    protocol::LinkTiming timing;
    sc_core::sc_time latency;  // the timing's and the hop's
    double latency_s;          // the same, in seconds
  };
  struct LinkStart {
    uint32_t link_class = 0;
    uint32_t allocator_id = kNone;
  };
  // A network leg (PathProvider::path_with_leg) as its flows need it, made when the first
  // crosses it: what it adds to a path's latency, the links of it the allocator sees, and the
  // figures of the flows that finished on it, added to its links' when they are read (a leg
  // spreads over dozens of links: a flow's start and end touch none of them). What a flow's
  // start reads is in the record's first cache line and one list; what its end adds to, in the
  // second line and another list (a data-parallel phase on tens of thousands of GPUs crosses
  // hundreds of thousands of legs, whose records do not stay in the cache).
  struct LegHop {              // a link of it that may fill
    uint32_t link;
    uint32_t allocator_id;     // the link's (LinkStart), kept once it has one (kNone before)
    double share;
    protocol::LinkTiming timing;  // the link's
  };
  struct LegTiming {           // a cost of its links (LinkTiming::same_cost), and the busy time
    protocol::LinkTiming timing;  // of its finished flows' bytes at that cost
    sc_dt::uint64 busy = 0;
  };
  struct alignas(64) LegState {
    bool ready = false;
    bool forbidden = false;        // crosses a forbidden link: checked link by link
    uint32_t links = 0;            // of the leg in all
    sc_dt::uint64 latency = 0;     // of its links crossed whole (sc_time value)
    double spread_latency_s = 0.0; // of those it spreads over, weighted by their shares
    std::vector<LegHop> hops;
    // Finished flows: bytes, chunks, and per cost the serialization of their bytes.
    alignas(64) double bytes = 0.0;
    double chunks = 0.0;
    std::vector<LegTiming> timings;
    // The entry of `timings` for a link of the leg.
    LegTiming& timing_of(const LinkState& link) {
      size_t k = 0;
      while (!timings[k].timing.same_cost(link.spec.timing)) ++k;
      return timings[k];
    }
  };
  struct Flow {               // by allocator flow id
    tlm::tlm_generic_payload* gp = nullptr;
    PacketSource* source = nullptr;
    std::vector<uint32_t> path;   // keeps its capacity when the id is reused
    std::vector<double> shares;   // of its bytes on each link of `path` (empty: all)
    double remaining = 0.0;       // payload bytes not yet sent
    double rate = 0.0;            // payload bytes/s since `since`
    sc_dt::uint64 since = 0;
    sc_dt::uint64 latency = 0;
    sc_dt::uint64 earliest = 0;   // arrival no earlier (a merged transfer's latency chain)
    uint64_t sequence = 0;        // injection order: breaks ties in time
    uint32_t heap_slot = kNone;
    uint32_t to_switch = kNone;   // the switch it ends at (in-switch reduction), else a GPU
    uint32_t leg = PathProvider::kNoLeg;  // its network leg, where `path` leaves it out
  };
  struct Timed {              // a heap entry: completion (by flow id) or arrival (by payload)
    sc_dt::uint64 time;
    uint64_t sequence;
    tlm::tlm_generic_payload* gp;
    uint32_t id;              // arrivals: the destination rank, or the switch
    uint32_t to_switch;       // arrivals: the switch, or kNone for a GPU
  };
  static constexpr uint32_t kNone = ~0u;

  // Starts the flow of `gp` over path_ from `source`, ending at switch `to_switch` (kNone: at
  // GPU t.destination); `via_switch`: it ends or starts at a reducing switch. The fabric already
  // holds its reference to gp.
  void start(tlm::tlm_generic_payload& gp, PacketSource& source, uint32_t to_switch, bool via_switch,
             uint32_t leg = PathProvider::kNoLeg);
  struct PathLatency {
    sc_core::sc_time whole;  // of the links it crosses whole
    double spread_s = 0.0;   // of those it spreads over, weighted by its shares
  };
  PathLatency hops(const protocol::FabricTransfer& t, double size, uint32_t leg);
  sc_dt::uint64 earliest_arrival(const protocol::FabricTransfer& t, const Flow& f, bool via_switch) const;
  LegState& leg_state(uint32_t leg);
  // Whether any of the leg's links is forbidden.
  bool crosses_forbidden(const PathProvider::Leg& leg) const;
  // The serialization of `bytes` over `link`, weighted by `share` (of a chunk stored and
  // forwarded on every link of a path), in ps.
  double chunk_ps(uint32_t link, double share, uint64_t bytes, float wire_factor) const {
    return share * double(link_class(link).timing.serialization_ps(bytes, wire_factor));
  }
  // The wire footprint of a header-only transfer on `link`.
  double header_bytes(uint32_t link) const { return link_class(link).timing.wire_bytes(0); }
  const LinkClass& link_class(uint32_t link) const { return classes_[starts_.at(link).link_class]; }
  // A flow's part of busy time `busy` on a link it puts `share` of its bytes on (rounded).
  static sc_dt::uint64 busy_share(sc_dt::uint64 busy, double share);
  void leg_carried(uint32_t leg, uint64_t bytes, float wire_factor);
  // A link's counters with the legs' figures added (they are added once, when first read).
  const LinkState& counted(uint32_t link) const;
  void fold_legs() const;
  void update();
  void deliver();
  // A flow that ended at switch `id`: what the switch does with it (reduce, multicast).
  void at_switch(uint32_t id, tlm::tlm_generic_payload& gp);
  // A chunk to multicast that reached unit `u`: what it carries, its payload released, counted
  // as `counted` multicasts.
  struct Multicast {
    protocol::FabricTransfer transfer;
    unsigned length;
  };
  Multicast multicast_arrived(ReductionUnit& u, tlm::tlm_generic_payload& gp, uint32_t counted);
  // The sum `gp` carries at network switch `id` goes down the aggregation tree; releases gp.
  void spread(uint32_t id, tlm::tlm_generic_payload& gp);
  ReductionUnit& unit(uint32_t id);
  static void absorb(tlm::tlm_generic_payload& gp);
  void schedule_update();
  void finish(uint32_t id, sc_dt::uint64 now);
  // Adds a finished transfer of `bytes` to the figures of the links of `path`.
  void carried(const std::vector<uint32_t>& path, const std::vector<double>& shares, uint64_t bytes, float wire_factor);
  // The same, with the busy time of the last link timing met kept in `cost` between calls.
  struct LinkCost {
    const protocol::LinkTiming* timing = nullptr;
    sc_dt::uint64 busy = 0;
  };
  void carried(const std::vector<uint32_t>& path, const std::vector<double>& shares, uint64_t bytes, float wire_factor,
               LinkCost& cost);
  // An echo (FabricTransfer::echo) finished: its images, every other member's transfer to the
  // member at the same distance along the ring, finished too, on their own links
  // (`into_switch`: an in-switch reduction's leg into the switch, else out of it).
  void images_carried(const protocol::FabricTransfer& t, bool into_switch);
  // A transfer that left its node finished: its rail images (image()).
  void rail_images_carried(const protocol::FabricTransfer& t, const Flow& f);
  // A flow's link that may fill (`image`: an image's): no image and flow may share one.
  void rail_link_used(uint32_t link, bool image);
  bool costs_alike(const Flow& f, uint32_t image_leg) const;
  // An echo node's in-switch reduction and multicast at switch `id` (at_switch).
  void echo_reduced(uint32_t id, tlm::tlm_generic_payload& gp);
  void echo_multicast(uint32_t id, tlm::tlm_generic_payload& gp);
  // Where `rank` is among an echo's members.
  uint32_t member_place(const protocol::FabricTransfer& t, uint32_t rank) const;
  uint32_t sum_switch(const protocol::FabricTransfer& t);
  void settle(uint32_t id, sc_dt::uint64 now);
  sc_dt::uint64 ticks(double seconds) const;
  // Indexed min-heap of the active flows' completion times.
  void completion_set(uint32_t id, sc_dt::uint64 time);
  void completion_erase(uint32_t id);
  void completion_up(size_t slot);
  void completion_down(size_t slot);

  const PathProvider& paths_;
  protocol::PayloadPool* pool_;
  // (Mutable: the legs' figures are added to their links' when a const reader first asks.)
  mutable std::vector<LinkState> links_;
  mutable std::vector<LegState> legs_;  // by leg id, grown on first use
  mutable std::vector<uint32_t> legs_unfolded_;  // legs holding figures their links lack
  std::deque<ReductionUnit> units_;  // by switch, grown on first use (flows point at them)
  std::vector<FlowSink*> sinks_;
  MaxMinFairShare share_;
  std::vector<Flow> flows_;
  std::vector<Timed> completions_;  // indexed heap
  std::vector<Timed> arrivals_;     // plain heap (time, sequence)
  std::vector<uint32_t> done_;
  std::vector<std::pair<tlm::tlm_generic_payload*, PacketSource*>> left_;
  std::vector<bool> forbidden_;      // by link (empty: none)
  std::vector<bool> never_fill_;     // by link (empty: none)
  size_t never_filling_ = 0;
  std::function<void(uint32_t)> crossed_;
  std::vector<uint32_t> path_;       // scratch: the path of the flow being injected
  std::vector<double> shares_;       // and its shares (PathProvider::path); start() empties it
  std::vector<uint32_t> hop_links_;  // scratch: what the allocator sees of it
  std::vector<LinkStart> starts_;  // by link
  std::vector<LinkClass> classes_;
  std::vector<double> hop_weights_;
  std::vector<uint32_t> image_path_;  // scratch: an echo's image's path and shares
  std::vector<double> image_shares_;
  std::vector<uint32_t> switch_path_;  // scratch: the path to an owner's switch (sum_switch)
  std::vector<std::vector<uint32_t>> image_offsets_;  // by rank: its rail images (empty: none)
  std::vector<uint8_t> rail_use_;                     // by link: kRealFlow | kImage
  std::vector<uint64_t> image_sent_, image_received_;  // by rank
  uint32_t image_node_gpus_ = 0;
  std::function<void(const std::string&, uint32_t)> image_broken_;
  static constexpr uint8_t kRealFlow = 1, kImage = 2;
  sc_core::sc_event wake_;
  sc_core::sc_event arrival_;
  double tick_s_ = 0.0;
  bool updating_ = false;
  uint64_t sequence_ = 0;
  uint64_t started_ = 0;
  uint64_t finished_ = 0;
  uint64_t delivered_ = 0;
  uint64_t reductions_ = 0;
  uint64_t multicasts_ = 0;
};

}  // namespace tessera::models
