#include "models/flow/max_min.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera::models {

MaxMinFairShare::MaxMinFairShare(const std::vector<double>& capacities) {
  links_.reserve(capacities.size());
  for (double c : capacities) add_link(c);
}

uint32_t MaxMinFairShare::add_link(double capacity) {
  if (!(capacity > 0.0))
    throw std::invalid_argument("max-min fair share: link " + std::to_string(links_.size()) +
                                " has capacity " + std::to_string(capacity) + ", not > 0");
  links_.emplace_back();
  links_.back().capacity = capacity;
  return static_cast<uint32_t>(links_.size() - 1);
}

void MaxMinFairShare::touch(uint32_t link) {
  Link& l = links_[link];
  if (l.dirty_mark == dirty_epoch_) return;
  l.dirty_mark = dirty_epoch_;
  dirty_.push_back(link);
}

uint32_t MaxMinFairShare::add(const uint32_t* links, const double* weights, size_t hops, double cap) {
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.hops.clear();
  f.rate = 0.0;
  f.active = true;
  f.fixed = false;
  f.bound = std::numeric_limits<double>::infinity();
  for (size_t h = 0; h < hops; ++h) {
    const uint32_t link = links[h];
    if (link >= links_.size())
      throw std::out_of_range("max-min fair share: flow crosses unknown link " +
                              std::to_string(link));
    const double weight = weights != nullptr ? weights[h] : 1.0;
    if (!(weight > 0.0))
      throw std::invalid_argument("max-min fair share: a hop's weight must be > 0");
    Link& l = links_[link];
    f.hops.push_back(Hop{link, static_cast<uint32_t>(l.members.size()), weight});
    l.members.push_back(Member{id, static_cast<uint32_t>(h)});
    l.weight_all += weight;
    f.bound = std::min(f.bound, l.capacity / weight);
    touch(link);
  }
  if (hops > 0 && cap > 0.0 && std::isfinite(cap)) {
    if (f.cap_link == kNoLink) f.cap_link = add_link(cap);  // (add_link leaves flows_ alone)
    Link& l = links_[f.cap_link];
    l.capacity = cap;
    f.hops.push_back(Hop{f.cap_link, static_cast<uint32_t>(l.members.size()), 1.0});
    l.members.push_back(Member{id, static_cast<uint32_t>(hops)});
    l.weight_all += 1.0;
    f.bound = std::min(f.bound, cap);
    touch(f.cap_link);
  }
  for (const Hop& hop : f.hops) {
    Link& l = links_[hop.link];
    set_demand(l, l.demand + hop.weight * f.bound);
  }
  if (hops == 0) {  // nothing limits it, and nothing it touches needs solving again
    f.rate = std::numeric_limits<double>::infinity();
    f.fixed = true;
  } else {
    added_.push_back(id);
  }
  ++active_;
  return id;
}

void MaxMinFairShare::remove(uint32_t flow) {
  Flow& f = flows_[flow];
  if (!f.active) throw std::logic_error("max-min fair share: removing an inactive flow");
  // Its links filled at its rate or above (0 if it was never solved: everything is solved again).
  if (!f.hops.empty()) removed_below_ = std::min(removed_below_, f.fixed ? f.rate : 0.0);
  for (const Hop& hop : f.hops) {
    Link& l = links_[hop.link];
    const Member last = l.members.back();
    l.members[hop.slot] = last;
    flows_[last.flow].hops[last.hop].slot = hop.slot;
    l.members.pop_back();
    // (An empty link's demand is exactly zero, whatever rounding the sums left.)
    set_demand(l, l.members.empty() ? 0.0 : l.demand - hop.weight * f.bound);
    l.weight_all = l.members.empty() ? 0.0 : l.weight_all - hop.weight;
    touch(hop.link);
  }
  f.active = false;
  f.rate = 0.0;
  free_.push_back(flow);
  --active_;
}

const std::vector<uint32_t>& MaxMinFairShare::recompute() {
  component_flows_.clear();
  if (dirty_.empty()) return component_flows_;
  ++recomputations_;
  // (The margin keeps in the solve a flow whose rate rounding put just below the level, and
  // covers the rounding that add() and remove() leave in a link's sum of weights.)
  kept_below_ = unchanged_below() * (1.0 - 1e-6);
  seed();
  if (!solve_region()) {
    ++components_solved_;
    collect_component();
    fill();
  }
  dirty_.clear();
  added_.clear();
  removed_below_ = std::numeric_limits<double>::infinity();
  ++dirty_epoch_;
  return component_flows_;
}

// Below the least of: the rates of the flows removed, and for each flow added the least
// capacity / (weight of all members) over its links (at level x a link carries at most x times
// its members' weight, so none of those links fills below it, and the added flow's rate is at
// least that).
double MaxMinFairShare::unchanged_below() const {
  double level = removed_below_;
  for (uint32_t id : added_) {
    const Flow& f = flows_[id];
    if (!f.active || f.fixed) continue;  // removed since (then level is 0), or crosses nothing
    for (const Hop& hop : f.hops) {
      const Link& l = links_[hop.link];
      level = std::min(level, l.capacity / l.weight_all);
    }
  }
  return level;
}

// The changed links that are tight now start the component; a changed link that was tight and is
// slack now lets its flows go: they are solved again without it. Flows that keep their rates
// are left where they are.
void MaxMinFairShare::seed() {
  seed_links_.clear();
  seed_flows_.clear();
  for (uint32_t link : dirty_) {
    Link& l = links_[link];
    const bool now = l.tight, before = l.was_tight;
    l.was_tight = now;
    if (now) seed_links_.push_back(link);
    else if (before)
      for (const Member& m : l.members)
        if (!kept(flows_[m.flow])) seed_flows_.push_back(m.flow);
  }
}

// Breadth-first from the seeds over tight links: a link's member flows, then those flows' other
// tight links. Each link's filling state starts here, in the same pass. Flows that keep their
// rates are not followed: what they use of a link comes off its residual.
void MaxMinFairShare::collect_component() {
  start_collecting();
  for (uint32_t link : seed_links_) join(link);
  for (uint32_t flow : seed_flows_) collect_flow(flow);
  for (uint32_t flow : region_) collect_flow(flow);  // a region given up: solved again here
  for (size_t next = 0; next < component_links_.size(); ++next) {
    const Link& l = links_[component_links_[next]];
    for (const Member& m : l.members) {
      const Flow& f = flows_[m.flow];
      if (kept(f)) filling_[next].residual -= f.hops[m.hop].weight * f.rate;
      else collect_flow(m.flow);  // (may join links: filling_ grows, `next` stays valid)
    }
    filling_[next].residual = std::max(0.0, filling_[next].residual);
  }
}

// The region: the seeds, and the flows on the changed tight links. Solved with every other flow
// at its rate, the result is the max-min allocation exactly when every flow still has a
// bottleneck: a full link where no flow has a higher rate (max-min's allocation is the one
// where every flow has one). The region's flows have theirs where they were fixed, unless a flow
// outside runs faster there; a flow outside keeps the one it was fixed at unless the region
// changed it. Such flows join the region, and it is solved again.
bool MaxMinFairShare::solve_region() {
  region_.clear();
  ++epoch_;
  for (uint32_t flow : seed_flows_) {
    flows_[flow].grow_mark = epoch_;
    region_.push_back(flow);
  }
  for (uint32_t link : seed_links_)
    for (const Member& m : links_[link].members) {
      Flow& f = flows_[m.flow];
      if (kept(f) || f.grow_mark == epoch_) continue;
      f.grow_mark = epoch_;
      region_.push_back(m.flow);
    }
  for (int round = 0; round < kMaxRegionRounds; ++round) {
    collect_region();
    fill();
    if (outside_stands()) {
      region_.clear();
      return true;
    }
    if (grow_.size() > component_flows_.size()) break;  // spreading: solve the component at once
    ++regions_grown_;
    region_.insert(region_.end(), grow_.begin(), grow_.end());  // (the region's flows are distinct)
  }
  // Given up: its flows' rates are the last round's, to be solved again with their component.
  for (uint32_t flow : region_) flows_[flow].fixed = false;
  return false;
}

void MaxMinFairShare::collect_region() {
  start_collecting();
  for (uint32_t flow : region_) collect_flow(flow);
  for (size_t i = 0; i < component_links_.size(); ++i) {
    const Link& l = links_[component_links_[i]];
    Filling& state = filling_[i];
    for (const Member& m : l.members) {
      const Flow& f = flows_[m.flow];
      if (f.mark != epoch_) state.residual -= f.hops[m.hop].weight * f.rate;
    }
    state.residual = std::max(0.0, state.residual);
  }
}

bool MaxMinFairShare::outside_stands() {
  constexpr double kSame = 1e-12;  // rates this close are equal (rounding in the fill)
  grow_.clear();
  for (size_t i = 0; i < component_links_.size(); ++i) {
    const uint32_t link = component_links_[i];
    const Link& l = links_[link];
    const Filling& state = filling_[i];
    const bool full = state.residual <= kSame * l.capacity;
    double top = state.level;  // the fastest of the region's flows on it
    if (top < 0)
      for (const Member& m : l.members)
        if (flows_[m.flow].mark == epoch_) top = std::max(top, flows_[m.flow].rate);
    for (const Member& m : l.members) {
      Flow& g = flows_[m.flow];
      if (g.mark == epoch_ || g.grow_mark == epoch_) continue;
      const bool faster = state.level >= 0 && g.rate > state.level * (1 + kSame);
      const bool lost = g.bottleneck == link && !(full && g.rate >= top * (1 - kSame));
      if (!faster && !lost) continue;
      g.grow_mark = epoch_;
      grow_.push_back(m.flow);
    }
  }
  return grow_.empty();
}

// A new epoch with no link and no flow collected (the links' filling states go with them).
void MaxMinFairShare::start_collecting() {
  ++epoch_;
  component_links_.clear();
  filling_.clear();
  component_flows_.clear();
}

// Adds a tight link to the component, its filling state reset.
void MaxMinFairShare::join(uint32_t link) {
  Link& l = links_[link];
  if (l.mark == epoch_) return;
  l.mark = epoch_;
  l.slot = static_cast<uint32_t>(component_links_.size());
  component_links_.push_back(link);
  filling_.push_back(Filling{l.capacity, 0.0, -1.0, 0, false});
}

// Adds a flow to the component, and its tight links with its weight on them.
void MaxMinFairShare::collect_flow(uint32_t flow) {
  Flow& f = flows_[flow];
  if (f.mark == epoch_) return;
  f.mark = epoch_;
  f.fixed = false;
  component_flows_.push_back(flow);
  hops_visited_ += f.hops.size();
  for (const Hop& hop : f.hops) {
    const Link& l = links_[hop.link];
    if (!l.tight) continue;
    join(hop.link);
    Filling& state = filling_[l.slot];
    state.weight += hop.weight;
    ++state.unfixed;
  }
}

void MaxMinFairShare::fill() {
  heap_.clear();
  for (size_t i = 0; i < component_links_.size(); ++i) {
    const Filling& state = filling_[i];
    if (state.unfixed != 0)
      heap_.push_back(HeapEntry{state.residual / state.weight, component_links_[i], static_cast<uint32_t>(i)});
  }
  for (size_t slot = heap_.size() / 2; slot-- > 0;) heap_down(slot);
  // The links left once every flow is fixed have nothing to fix: the fill ends there.
  size_t unfixed = component_flows_.size();
  while (!heap_.empty() && unfixed > 0) {
    // Levels only rise (by (c - w x)/(W - w) >= c/W for x <= c/W), so a stale entry sits too
    // high: refresh the top until it is current; the links below are never touched for it.
    const HeapEntry top = heap_.front();
    Filling& t = filling_[top.slot];
    if (t.unfixed == 0) {
      heap_pop();
      continue;
    }
    if (t.stale) {
      t.stale = false;
      heap_.front().level = t.residual / std::max(t.weight, 1e-300);
      heap_down(0);
      continue;
    }
    heap_pop();
    const double level = top.level;
    t.level = level;
    // Every unfixed flow crossing the fullest link stops rising at its level.
    for (const Member& m : links_[top.link].members) {
      Flow& f = flows_[m.flow];
      if (f.fixed) continue;
      f.fixed = true;
      f.rate = level;
      f.bottleneck = top.link;
      --unfixed;
      for (const Hop& hop : f.hops) {
        const Link& l = links_[hop.link];
        if (l.mark != epoch_) continue;  // slack: not in the component
        Filling& state = filling_[l.slot];
        state.residual = std::max(0.0, state.residual - hop.weight * level);
        state.weight -= hop.weight;
        --state.unfixed;
        state.stale = true;
      }
    }
  }
  // Every flow has a tight link (the one that bounds it), so none is left; were rounding to
  // leave one, its bound is what no link keeps from it.
  for (uint32_t id : component_flows_) {
    Flow& f = flows_[id];
    if (f.fixed) continue;
    f.fixed = true;
    f.rate = f.bound;
    f.bottleneck = kNoLink;
  }
}

// Sifts the entry at `slot` down to where it belongs. The entries hold their keys, so ordering
// them reads the heap alone, not the links.
void MaxMinFairShare::heap_down(size_t slot) {
  const HeapEntry e = heap_[slot];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * slot + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
    if (!heap_[child].before(e)) break;
    heap_[slot] = heap_[child];
    slot = child;
  }
  heap_[slot] = e;
}

void MaxMinFairShare::heap_pop() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) heap_down(0);
}

}  // namespace tessera::models
