// Sets of the network's destination keys that a spread from one source moves alike (the bound on
// links that cannot fill, platforms/link_bounds.cpp).
//
// A switch forwards toward a key by that key's list, so it splits the keys into a few parts, one
// per list; switches whose parts are the same sets (every spine of a pod, every core of a tree)
// share a partition. A spread from one source toward every key at once then follows groups of
// keys: a group reaching a switch splits into its intersections with the switch's parts, and
// each keeps moving alike. Groups are stored once by content, so the same set reached by
// different paths (a pod's keys through every core) is one group, and a split is computed once
// per group and partition.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tessera::platforms {

class KeyGroups {
 public:
  static constexpr uint32_t kNoList = 0xffffffffu;  // a key the device has no route toward

  // `capacity[k]`: what key k's gateways can receive, bytes/s.
  explicit KeyGroups(std::vector<double> capacity);

  uint32_t keys() const { return static_cast<uint32_t>(capacity_.size()); }
  // The group of these keys (sorted, each once), stored on first sight.
  uint32_t group(const std::vector<uint32_t>& sorted_keys);
  const std::vector<uint32_t>& members(uint32_t group) const { return members_[group]; }
  // What the group's keys can receive together.
  double capacity(uint32_t group) const { return group_capacity_[group]; }

  // The partition of a device that forwards toward key k by list `list_of(k)` (kNoList: no
  // route): parts are keys of equal lists, compared by content (`same(a, b)`), stored once.
  // `label_lists`, where given, gets one of the device's lists for each label.
  template <typename ListOf, typename Same>
  uint32_t partition(ListOf list_of, Same same, std::vector<uint32_t>* label_lists = nullptr);
  // Group g's parts under partition p, in order of their first key, each with a key of it;
  // keys the partition has no route toward are left out.
  struct Part {
    uint32_t group = 0, key = 0, label = 0;  // label: the part's in the partition
  };
  // The part of `partition` that holds key k (kNoList: none).
  uint32_t label(uint32_t partition, uint32_t key) const { return labels_[partition][key]; }
  const std::vector<Part>& split(uint32_t group, uint32_t partition);

  // What the keys can receive of the largest share toward each: the sum over keys of the
  // key's capacity times the largest share of `shares` (group, share) whose group holds it.
  double receivable(const std::vector<std::pair<uint32_t, double>>& shares);

  // Sums shares of overlapping groups key by key: `shares` (group, share) becomes the groups
  // of keys with equal totals (largest first), disjoint.
  void disjoint(std::vector<std::pair<uint32_t, double>>& shares);

 private:
  uint32_t partition(const std::vector<uint32_t>& labels);

  std::vector<double> capacity_;
  std::vector<std::vector<uint32_t>> members_;
  std::vector<double> group_capacity_;
  std::unordered_multimap<uint64_t, uint32_t> groups_by_hash_;
  std::vector<std::vector<uint32_t>> labels_;  // per partition: per key, its part (kNoList: none)
  std::unordered_multimap<uint64_t, uint32_t> partitions_by_hash_;
  std::unordered_map<uint64_t, std::vector<Part>> splits_;  // group << 32 | partition
  // Scratch: labels of the partition being built, the lists they stand for, a part per label,
  // a share per key.
  std::vector<uint32_t> scratch_labels_, scratch_lists_, scratch_part_, scratch_keys_;
  std::unordered_map<uint32_t, uint32_t> label_of_list_;
  std::vector<double> scratch_share_;
};

template <typename ListOf, typename Same>
uint32_t KeyGroups::partition(ListOf list_of, Same same, std::vector<uint32_t>* label_lists) {
  scratch_labels_.assign(keys(), kNoList);
  scratch_lists_.clear();
  label_of_list_.clear();
  for (uint32_t k = 0; k < keys(); ++k) {
    const uint32_t list = list_of(k);
    if (list == kNoList) continue;
    auto [at, added] = label_of_list_.emplace(list, 0);
    if (added) {  // a list not seen here: its label is that of an equal one, or a new one
      uint32_t label = 0;
      while (label < scratch_lists_.size() && !same(scratch_lists_[label], list)) ++label;
      if (label == scratch_lists_.size()) scratch_lists_.push_back(list);
      at->second = label;
    }
    scratch_labels_[k] = at->second;
  }
  if (label_lists != nullptr) *label_lists = scratch_lists_;
  return partition(scratch_labels_);
}

}  // namespace tessera::platforms
