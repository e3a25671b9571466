// Max-min fair rate allocation over directed links (progressive filling), for the flow fidelity
// mode.
//
// Each link has a capacity (bytes/s). Each flow crosses a list of distinct links and uses
// `weight` units of a link's capacity per unit of its own rate there (1 for plain bytes; the
// flow fabric passes wire bytes / payload bytes so that packet overhead counts against the link).
// The allocation is max-min fair: no flow's rate can grow without lowering the rate of a flow
// that has a rate no larger.
//
// Progressive filling: every unfixed flow's rate rises together; the first link to fill (least
// residual capacity per unit of unfixed weight crossing it) fixes every unfixed flow crossing it
// at that level; repeat until every flow is fixed. A min-heap of the component's links
// keyed by (level, link id) finds the next link to fill. A link's level only rises as flows are
// fixed elsewhere, so a changed link is only marked stale and re-placed when it reaches the top.
//
// Incremental: add() and remove() only mark the links the flow crosses. recompute() first
// solves a region: the flows on the changed links, every other flow held at its rate (what it
// uses of a link comes off the link's capacity). The result is the max-min allocation when every
// flow has a bottleneck, a full link where no flow runs faster (an allocation in which every
// flow has one is the max-min allocation, which is unique). A region's flow has one where the
// fill fixed it, unless a flow outside runs faster there; a flow outside keeps the one it was
// fixed at unless the region's flows left it slack or overtook it there. Flows that fail either check join the
// region, which is solved again. A change whose effect stays near it (a tree's chunk ending, its
// neighbours' rates rising) is solved at the cost of its neighbourhood, not of every flow it is
// connected to. Where the region spreads (more flows join than it has, or kMaxRegionRounds
// rounds), recompute() solves the connected component of the changed links (links linked through
// shared flows); rates outside it cannot change. Nor can rates below the changes' level:
// progressive filling below a level at which no changed link can fill runs as it did, so flows
// fixed below it keep their rates (a removed flow's links filled at its rate or above; an added
// flow's links cannot fill below the least capacity / weight of all members over its links).
// Such flows stay out of the region and the component, their use of its links taken off the
// links' capacities; the fill starts where they stopped.
//
// Slack links: a flow's rate never exceeds its bound, the least capacity / weight over its
// links (and its cap). A link whose members' weighted bounds add up to less than its capacity
// can never fill, so it constrains no one: it neither joins components nor enters the heap
// (removing a constraint that no feasible allocation can reach leaves the max-min allocation
// as it was). The link that bounds a flow always has demand >= its capacity, so every flow
// keeps the link that limits it alone. On a network whose flows spread thinly over many
// equal-cost links, those links stay slack and the flows' components are their own NICs'.
//
// The region's rates and the component's agree to rounding (the fill subtracts in another
// order): within 1e-15 of each other over every solve of a 4,096-GPU training iteration.
//
// Cost per recompute: O(H log H) with H the flow-hops over tight links in the region (each
// round) or the component; at worst every active flow's path. Storage (per flow hop lists, per
// link member lists, the heap, the component and region lists and their links' filling states)
// keeps its capacity when flows end, so steady state allocates nothing. Everything is ordered
// by ids and by the order of calls, never by addresses: same calls, same rates, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace tessera::models {

class MaxMinFairShare {
 public:
  MaxMinFairShare() = default;
  explicit MaxMinFairShare(const std::vector<double>& capacities);

  // Adds a link of `capacity` bytes/s; returns its id (0, 1, 2, ... in call order).
  uint32_t add_link(double capacity);
  uint32_t link_count() const { return static_cast<uint32_t>(links_.size()); }
  double capacity(uint32_t link) const { return links_[link].capacity; }

  // Adds a flow crossing `hops` links `links[0..hops)` (distinct), with `weights` per hop
  // (nullptr: all 1), at most `cap` bytes/s (0: no cap; the flow's own link of that capacity,
  // kept with its id). Returns the flow's id; ids of removed flows are reused (last freed
  // first). Its rate is 0 until the next recompute(), except a flow crossing no link: its rate
  // is infinite at once and no recompute() reports it.
  uint32_t add(const uint32_t* links, const double* weights, size_t hops, double cap = 0.0);
  void remove(uint32_t flow);

  // Re-solves the rates that links touched since the last call can change and returns the ids
  // of the flows it solved (in a deterministic order; the others keep their rates); the list is
  // valid until the next call.
  const std::vector<uint32_t>& recompute();
  bool pending() const { return !dirty_.empty(); }

  double rate(uint32_t flow) const { return flows_[flow].rate; }
  size_t active() const { return active_; }
  // Flows crossing `link` now.
  size_t flows_on(uint32_t link) const { return links_[link].members.size(); }

  // Work counters: recomputations and flow-hops visited by them; regions solved again with
  // more flows, and recomputations that solved the whole component.
  uint64_t recomputations() const { return recomputations_; }
  uint64_t hops_visited() const { return hops_visited_; }
  uint64_t regions_grown() const { return regions_grown_; }
  uint64_t components_solved() const { return components_solved_; }

 private:
  static constexpr uint32_t kNoLink = 0xffffffffu;
  static constexpr int kMaxRegionRounds = 6;
  struct Hop {
    uint32_t link;
    uint32_t slot;   // index of this flow in the link's member list
    double weight;
  };
  struct Member {
    uint32_t flow;
    uint32_t hop;    // index of the link in the flow's hop list
  };
  // A flow in one cache line (aligned, so that none straddles two): the fill reads its `fixed`
  // and its hops for every member of each link it pops.
  struct alignas(64) Flow {
    std::vector<Hop> hops;  // keeps its capacity when the id is reused
    uint32_t cap_link = kNoLink;  // its own link for a rate cap, once it has had one
    double rate = 0.0;
    double bound = 0.0;     // the most it can get: min over its links of capacity / weight
    uint32_t mark = 0;      // epoch of the last recompute that visited it
    uint32_t bottleneck = kNoLink;  // the link that fixed it in its last solve
    uint32_t grow_mark = 0; // epoch of the region round that asked for it
    bool active = false;
    bool fixed = false;
  };
  static_assert(sizeof(Flow) == 64, "a flow's record is one cache line");
  // A link in one cache line: what a flow's start and end read and write for each link it
  // crosses (its members, capacity, demand and sum of weights, whether it can fill and was
  // marked changed), and where a recompute that joined it keeps its filling state. Flows start
  // and end on links all over a large network; on tens of thousands of GPUs the allocator holds
  // a quarter of a million links, whose records no longer fit in the last-level cache at two
  // lines each (65,536 GPUs: 33.6 MB, docs/fidelity.md "The last step").
  struct alignas(64) Link {
    std::vector<Member> members;
    double capacity = 0.0;
    double demand = 0.0;     // sum over members of weight x bound: below capacity, it is slack
    double weight_all = 0.0; // sum of the weights of all member flows, kept by add and remove
    uint32_t dirty_mark = 0;
    uint32_t mark = 0;       // epoch of the last recompute that visited it
    uint32_t slot = 0;       // its filling state's index in that recompute (`filling_`)
    bool tight = false;      // demand not clearly below capacity: it can fill
    bool was_tight = false;  // tight at the last recompute that saw it change
  };
  static_assert(sizeof(Link) == 64, "a link's record is one cache line");
  // A recompute's state of a link it joined, in the order it joined them (beside
  // `component_links_`): a component's few dozen links in a few lines the fill walks often.
  struct Filling {
    double residual = 0.0;  // capacity not taken by flows fixed (or kept) so far
    double weight = 0.0;    // sum of the weights of unfixed member flows
    double level = -1.0;    // the level it filled at, fixing flows (-1: it did not)
    uint32_t unfixed = 0;
    bool stale = false;     // its flows changed since its level was placed in the heap
  };
  // The fill's heap: a link, its filling state's slot and its level (residual / weight: where it
  // fills), the lowest level first, ties to the lowest link id.
  struct HeapEntry {
    double level;
    uint32_t link;
    uint32_t slot;
    bool before(const HeapEntry& o) const { return level < o.level || (level == o.level && link < o.link); }
  };

  void touch(uint32_t link);
  // The level below which no change since the last recompute reaches: flows fixed below it
  // keep their rates.
  double unchanged_below() const;
  // Whether a flow keeps its rate in this recompute (solved before, below `kept_below_`).
  bool kept(const Flow& f) const { return f.fixed && f.rate < kept_below_; }
  // Sets a link's demand, and whether it can fill (demand not clearly below capacity).
  static void set_demand(Link& l, double demand) {
    l.demand = demand;
    l.tight = demand > l.capacity * (1.0 - 1e-9);
  }
  void start_collecting();
  void join(uint32_t link);
  void collect_flow(uint32_t flow);
  // The flows to solve first: those on changed links that are tight or were (kept ones aside).
  void seed();
  void collect_component();
  // Solves the seeds with every other flow at its rate, growing the region until the others'
  // rates stand; false (nothing settled) when it grows past kMaxRegionRounds.
  bool solve_region();
  void collect_region();
  // Flows outside the region whose rates no longer stand (into grow_).
  bool outside_stands();
  void fill();
  void heap_down(size_t slot);
  void heap_pop();

  std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<Link> links_;
  std::vector<uint32_t> dirty_;
  std::vector<uint32_t> added_;   // flows added since the last recompute
  double removed_below_ = std::numeric_limits<double>::infinity();  // least rate removed since
  double kept_below_ = 0.0;       // this recompute's level (unchanged_below, with a margin)
  uint32_t dirty_epoch_ = 1;
  uint32_t epoch_ = 0;
  std::vector<uint32_t> component_links_;
  std::vector<Filling> filling_;  // of component_links_, index for index
  std::vector<uint32_t> component_flows_;
  std::vector<uint32_t> seed_links_, seed_flows_;  // this recompute's start
  std::vector<uint32_t> region_, grow_;            // the region's flows, and those it asks for
  std::vector<HeapEntry> heap_;
  size_t active_ = 0;
  uint64_t recomputations_ = 0;
  uint64_t hops_visited_ = 0;
  uint64_t regions_grown_ = 0;
  uint64_t components_solved_ = 0;
};

}  // namespace tessera::models
