#include "platforms/key_groups.h"

#include <algorithm>

#include "platforms/keyed_table.h"

namespace tessera::platforms {

namespace {

uint64_t hash_of(const std::vector<uint32_t>& values) {
  ContentHash h;
  h.add(uint64_t(values.size()));
  for (uint32_t v : values) h.add(uint64_t(v));
  return h.value;
}

// The place of `values` in `stored`, added there on first sight (`added`), found by its hash.
uint32_t stored_once(std::vector<std::vector<uint32_t>>& stored, std::unordered_multimap<uint64_t, uint32_t>& by_hash,
                     const std::vector<uint32_t>& values, bool& added) {
  const uint64_t h = hash_of(values);
  added = false;
  for (auto [at, end] = by_hash.equal_range(h); at != end; ++at)
    if (stored[at->second] == values) return at->second;
  added = true;
  stored.push_back(values);
  by_hash.emplace(h, static_cast<uint32_t>(stored.size() - 1));
  return static_cast<uint32_t>(stored.size() - 1);
}

}  // namespace

KeyGroups::KeyGroups(std::vector<double> capacity) : capacity_(std::move(capacity)) {
  scratch_part_.assign(keys(), kNoList);
  scratch_share_.assign(keys(), 0.0);
}

uint32_t KeyGroups::group(const std::vector<uint32_t>& sorted_keys) {
  bool added = false;
  const uint32_t id = stored_once(members_, groups_by_hash_, sorted_keys, added);
  if (added) {
    double c = 0.0;
    for (uint32_t k : sorted_keys) c += capacity_[k];
    group_capacity_.push_back(c);
  }
  return id;
}

uint32_t KeyGroups::partition(const std::vector<uint32_t>& labels) {
  bool added = false;
  return stored_once(labels_, partitions_by_hash_, labels, added);
}

const std::vector<KeyGroups::Part>& KeyGroups::split(uint32_t group, uint32_t partition) {
  const uint64_t at = uint64_t(group) << 32 | partition;
  auto found = splits_.find(at);
  if (found != splits_.end()) return found->second;
  const std::vector<uint32_t>& labels = labels_[partition];
  // Keys by part, parts in order of their first key (the keys are sorted, so each part's are).
  std::vector<std::vector<uint32_t>> parts;
  std::vector<uint32_t> used;
  for (uint32_t k : members_[group]) {
    const uint32_t label = labels[k];
    if (label == kNoList) continue;
    if (scratch_part_[label] == kNoList) {
      scratch_part_[label] = static_cast<uint32_t>(parts.size());
      used.push_back(label);
      parts.emplace_back();
    }
    parts[scratch_part_[label]].push_back(k);
  }
  for (uint32_t label : used) scratch_part_[label] = kNoList;
  std::vector<Part> out;
  out.reserve(parts.size());
  for (const std::vector<uint32_t>& keys : parts)
    out.push_back(Part{this->group(keys), keys.front(), labels[keys.front()]});
  return splits_.emplace(at, std::move(out)).first->second;
}

double KeyGroups::receivable(const std::vector<std::pair<uint32_t, double>>& shares) {
  if (shares.size() == 1) return shares[0].second * group_capacity_[shares[0].first];
  scratch_keys_.clear();
  for (const auto& [g, share] : shares)
    for (uint32_t k : members_[g]) {
      if (scratch_share_[k] == 0.0) scratch_keys_.push_back(k);
      scratch_share_[k] = std::max(scratch_share_[k], share);
    }
  double total = 0.0;
  for (uint32_t k : scratch_keys_) {
    total += capacity_[k] * scratch_share_[k];
    scratch_share_[k] = 0.0;
  }
  return total;
}

void KeyGroups::disjoint(std::vector<std::pair<uint32_t, double>>& shares) {
  scratch_keys_.clear();
  for (const auto& [g, share] : shares)
    for (uint32_t k : members_[g]) {
      if (scratch_share_[k] == 0.0) scratch_keys_.push_back(k);
      scratch_share_[k] += share;
    }
  std::sort(scratch_keys_.begin(), scratch_keys_.end(), [&](uint32_t a, uint32_t b) {
    return scratch_share_[a] != scratch_share_[b] ? scratch_share_[a] > scratch_share_[b] : a < b;
  });
  shares.clear();
  std::vector<uint32_t> keys;
  for (size_t i = 0; i < scratch_keys_.size();) {
    const double share = scratch_share_[scratch_keys_[i]];
    keys.clear();
    for (; i < scratch_keys_.size() && scratch_share_[scratch_keys_[i]] == share; ++i) keys.push_back(scratch_keys_[i]);
    shares.emplace_back(group(keys), share);
  }
  for (uint32_t k : scratch_keys_) scratch_share_[k] = 0.0;
}

}  // namespace tessera::platforms
