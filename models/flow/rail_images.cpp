// The flow fabric's rail images (FlowFabric::image; docs/fidelity.md, "Rail images"): a GPU's
// transfers between nodes that stand for those of GPUs on other rails of its node, counted on
// the images' own links, and the checks that nothing else shares those links.
#include "models/flow/flow_fabric.h"

#include <algorithm>

namespace tessera::models {

void FlowFabric::image(const std::vector<int>& sources, uint32_t gpus_per_node,
                       std::function<void(const std::string&, uint32_t)> broken) {
  image_offsets_.assign(sources.size(), {});
  for (size_t rank = 0; rank < sources.size(); ++rank)
    if (sources[rank] >= 0) image_offsets_[size_t(sources[rank])].push_back(uint32_t(rank - size_t(sources[rank])));
  image_sent_.assign(std::max(sources.size(), sinks_.size()), 0);
  image_received_.assign(image_sent_.size(), 0);
  rail_use_.assign(links_.size(), 0);
  image_node_gpus_ = gpus_per_node;
  image_broken_ = std::move(broken);
}

void FlowFabric::rail_link_used(uint32_t link, bool image) {
  const uint8_t mine = image ? kImage : kRealFlow, other = image ? kRealFlow : kImage;
  uint8_t& use = rail_use_[link];
  if ((use & other) && image_broken_)
    image_broken_("a rail image and a flow both crossed a link that can fill", link);
  use |= mine;
}

// The image's path costs, link by link, what the transfer's does (its leg: as many links, of the
// same costs): a rail with a slower or missing link is not the transfer's image.
bool FlowFabric::costs_alike(const Flow& f, uint32_t image_leg) const {
  if (image_path_.size() != f.path.size() || (image_leg == PathProvider::kNoLeg) != (f.leg == PathProvider::kNoLeg))
    return false;
  for (size_t i = 0; i < f.path.size(); ++i)
    if (!links_[f.path[i]].spec.timing.same_cost(links_[image_path_[i]].spec.timing)) return false;
  if (f.leg == PathProvider::kNoLeg) return true;
  const LegState &a = legs_[f.leg], &b = legs_[image_leg];
  if (a.links != b.links || a.timings.size() != b.timings.size()) return false;
  for (const LegTiming& k : a.timings)  // (the same costs, in any order)
    if (std::none_of(b.timings.begin(), b.timings.end(), [&](const LegTiming& o) { return o.timing.same_cost(k.timing); }))
      return false;
  return true;
}

void FlowFabric::rail_images_carried(const protocol::FabricTransfer& t, const Flow& f) {
  if (t.source >= image_offsets_.size() || image_offsets_[t.source].empty()) return;
  if (t.source / image_node_gpus_ == t.destination / image_node_gpus_) return;  // inside its node
  if (t.purpose != protocol::TransferPurpose::Collective && t.purpose != protocol::TransferPurpose::PointToPoint) {
    if (image_broken_) image_broken_("a transfer with rail images climbs an in-network reduction", kNoLink);
    return;
  }
  for (uint32_t offset : image_offsets_[t.source]) {
    protocol::FabricTransfer image = t;
    image.source += offset;
    image.destination += offset;
    image_shares_.clear();
    const uint32_t leg = paths_.path_with_leg(image, image_path_, image_shares_);
    if (leg != PathProvider::kNoLeg) leg_state(leg);
    if (!costs_alike(f, leg) && image_broken_)
      image_broken_("GPU " + std::to_string(image.source) + "'s path to GPU " + std::to_string(image.destination) +
                    " does not cost what GPU " + std::to_string(t.source) + "'s to GPU " +
                    std::to_string(t.destination) + " does", kNoLink);
    for (uint32_t l : image_path_)
      if (never_fill_.empty() || !never_fill_[l]) rail_link_used(l, true);
    carried(image_path_, image_shares_, t.bytes, t.wire_factor);
    if (leg != PathProvider::kNoLeg) {
      for (const LegHop& h : legs_[leg].hops) rail_link_used(h.link, true);
      leg_carried(leg, t.bytes, t.wire_factor);
    }
    const size_t ranks = size_t(std::max(image.source, image.destination)) + 1;
    if (image_sent_.size() < ranks) {
      image_sent_.resize(ranks, 0);
      image_received_.resize(ranks, 0);
    }
    image_sent_[image.source] += t.bytes;
    image_received_[image.destination] += t.bytes;
  }
}

}  // namespace tessera::models
