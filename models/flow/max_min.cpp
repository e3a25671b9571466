#include "models/flow/max_min.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera::models {

namespace {

// Heap order: the lowest level on top, ties to the lowest link id.
struct Higher {
  template <typename Level>
  bool operator()(const Level& a, const Level& b) const {
    return a.level > b.level || (a.level == b.level && a.link > b.link);
  }
};

}  // namespace

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

uint32_t MaxMinFairShare::add(const uint32_t* links, const double* weights, size_t hops) {
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
    touch(link);
  }
  if (hops == 0) {  // nothing limits it, and nothing it touches needs solving again
    f.rate = std::numeric_limits<double>::infinity();
    f.fixed = true;
  }
  ++active_;
  return id;
}

void MaxMinFairShare::remove(uint32_t flow) {
  Flow& f = flows_[flow];
  if (!f.active) throw std::logic_error("max-min fair share: removing an inactive flow");
  for (const Hop& hop : f.hops) {
    Link& l = links_[hop.link];
    const Member last = l.members.back();
    l.members[hop.slot] = last;
    flows_[last.flow].hops[last.hop].slot = hop.slot;
    l.members.pop_back();
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
  collect_component();
  fill();
  dirty_.clear();
  ++dirty_epoch_;
  return component_flows_;
}

// Breadth-first from the touched links: a link's member flows, then those flows' other links.
void MaxMinFairShare::collect_component() {
  ++epoch_;
  component_links_.clear();
  for (uint32_t link : dirty_) {
    if (links_[link].mark == epoch_) continue;
    links_[link].mark = epoch_;
    component_links_.push_back(link);
  }
  for (size_t next = 0; next < component_links_.size(); ++next) {
    const Link& l = links_[component_links_[next]];
    for (const Member& m : l.members) {
      Flow& f = flows_[m.flow];
      if (f.mark == epoch_) continue;
      f.mark = epoch_;
      component_flows_.push_back(m.flow);
      for (const Hop& hop : f.hops) {
        Link& other = links_[hop.link];
        if (other.mark == epoch_) continue;
        other.mark = epoch_;
        component_links_.push_back(hop.link);
      }
    }
  }
}

void MaxMinFairShare::fill() {
  for (uint32_t link : component_links_) {
    Link& l = links_[link];
    l.residual = l.capacity;
    l.weight = 0.0;
    l.unfixed = 0;
  }
  for (uint32_t id : component_flows_) {
    Flow& f = flows_[id];
    f.fixed = false;
    hops_visited_ += f.hops.size();
    for (const Hop& hop : f.hops) {
      Link& l = links_[hop.link];
      l.weight += hop.weight;
      ++l.unfixed;
    }
  }
  heap_.clear();
  for (uint32_t link : component_links_) {
    Link& l = links_[link];
    if (l.unfixed == 0) continue;
    heap_.push_back(Level{l.residual / l.weight, link, ++l.version});
  }
  std::make_heap(heap_.begin(), heap_.end(), Higher{});
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Higher{});
    const Level top = heap_.back();
    heap_.pop_back();
    Link& bottleneck = links_[top.link];
    if (top.version != bottleneck.version || bottleneck.unfixed == 0) continue;  // stale
    // Every unfixed flow crossing the fullest link stops rising at its level.
    for (const Member& m : bottleneck.members) {
      Flow& f = flows_[m.flow];
      if (f.fixed) continue;
      f.fixed = true;
      f.rate = top.level;
      for (const Hop& hop : f.hops) {
        Link& l = links_[hop.link];
        l.residual = std::max(0.0, l.residual - hop.weight * top.level);
        l.weight -= hop.weight;
        --l.unfixed;
        if (hop.link == top.link || l.unfixed == 0) continue;
        // Its level can only rise: the old entry goes stale and a new one replaces it.
        const double weight = std::max(l.weight, 1e-300);
        heap_.push_back(Level{l.residual / weight, hop.link, ++l.version});
        std::push_heap(heap_.begin(), heap_.end(), Higher{});
      }
    }
  }
}

}  // namespace tessera::models
