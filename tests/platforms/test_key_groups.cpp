// Groups of destination keys (platforms/key_groups.h): stored once by content, split by a
// device's partition, overlapping shares summed key by key.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "platforms/key_groups.h"

namespace tessera::platforms {
namespace {

TEST(KeyGroups, AGroupIsStoredOnceByContent) {
  KeyGroups groups({1.0, 2.0, 4.0, 8.0});
  const uint32_t a = groups.group({0, 2});
  EXPECT_EQ(groups.group({0, 2}), a);
  EXPECT_NE(groups.group({0, 3}), a);
  EXPECT_DOUBLE_EQ(groups.capacity(a), 5.0);
  EXPECT_EQ(groups.members(a), (std::vector<uint32_t>{0, 2}));
}

TEST(KeyGroups, ADevicesPartitionComparesListsByContent) {
  KeyGroups groups({1, 1, 1, 1, 1, 1});
  // Lists 10 and 11 hold the same ports; 12 others; key 5 has no route.
  const std::vector<uint32_t> lists = {10, 12, 11, 12, 10, KeyGroups::kNoList};
  auto same = [](uint32_t a, uint32_t b) { return (a == 10 || a == 11) == (b == 10 || b == 11); };
  const uint32_t p = groups.partition([&](uint32_t k) { return lists[k]; }, same);
  // Another device whose lists are other ids but the same parts shares the partition.
  const std::vector<uint32_t> other = {20, 21, 20, 21, 20, KeyGroups::kNoList};
  std::vector<uint32_t> label_lists;
  EXPECT_EQ(groups.partition([&](uint32_t k) { return other[k]; }, [](uint32_t a, uint32_t b) { return a == b; },
                             &label_lists),
            p);
  EXPECT_EQ(label_lists, (std::vector<uint32_t>{20, 21}));  // that device's own list for each part

  const uint32_t all = groups.group({0, 1, 2, 3, 4, 5});
  const std::vector<KeyGroups::Part>& parts = groups.split(all, p);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(groups.members(parts[0].group), (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(parts[0].key, 0u);
  EXPECT_EQ(groups.members(parts[1].group), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(parts[1].key, 1u);
  // Each part names its label: the lists of keys 0 and 1 are the partition's first two.
  EXPECT_EQ(parts[0].label, 0u);
  EXPECT_EQ(parts[1].label, 1u);
  EXPECT_EQ(groups.label(p, 2), 0u);
  EXPECT_EQ(groups.label(p, 3), 1u);
  EXPECT_EQ(groups.label(p, 5), KeyGroups::kNoList);
  const std::vector<KeyGroups::Part>& some = groups.split(groups.group({3, 4}), p);
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(groups.members(some[0].group), (std::vector<uint32_t>{3}));
  EXPECT_EQ(groups.members(some[1].group), (std::vector<uint32_t>{4}));
  EXPECT_EQ(some[0].label, 1u);
  EXPECT_EQ(some[1].label, 0u);
}

TEST(KeyGroups, OverlappingSharesAddUpKeyByKey) {
  KeyGroups groups({1.0, 2.0, 4.0, 8.0});
  std::vector<std::pair<uint32_t, double>> shares = {{groups.group({0, 1, 2}), 0.25}, {groups.group({1, 2, 3}), 0.5}};
  groups.disjoint(shares);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(groups.members(shares[0].first), (std::vector<uint32_t>{1, 2}));
  EXPECT_DOUBLE_EQ(shares[0].second, 0.75);
  EXPECT_EQ(groups.members(shares[1].first), (std::vector<uint32_t>{3}));
  EXPECT_DOUBLE_EQ(shares[1].second, 0.5);
  EXPECT_EQ(groups.members(shares[2].first), (std::vector<uint32_t>{0}));
  EXPECT_DOUBLE_EQ(shares[2].second, 0.25);
}

TEST(KeyGroups, WhatKeysCanReceiveTakesEachKeysLargestShare) {
  KeyGroups groups({1.0, 2.0, 4.0, 8.0});
  EXPECT_DOUBLE_EQ(groups.receivable({{groups.group({0, 1}), 0.5}}), 1.5);
  // Key 1 in both: its larger share counts, once.
  EXPECT_DOUBLE_EQ(groups.receivable({{groups.group({0, 1}), 0.5}, {groups.group({1, 3}), 0.25}}),
                   1.0 * 0.5 + 2.0 * 0.5 + 8.0 * 0.25);
  EXPECT_DOUBLE_EQ(groups.receivable({}), 0.0);
}

}  // namespace
}  // namespace tessera::platforms
