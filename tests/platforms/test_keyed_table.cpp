// The flow paths' table of network legs by key (platforms/keyed_table.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "platforms/keyed_table.h"

namespace tessera::platforms {
namespace {

TEST(KeyedTable, FindsWhatWasAddedAndNothingElseAsItGrows) {
  KeyedTable<uint32_t> table;
  EXPECT_EQ(table.find(7), nullptr);
  std::map<uint64_t, uint32_t> added;
  std::mt19937_64 random(5);
  // Keys as the legs have them: gateway pairs, and class keys with the top bit set; and keys
  // that agree in their low bits, which a table picking slots by the low bits would pile up.
  for (uint32_t i = 0; i < 5000; ++i) {
    uint64_t key = random();
    if (i % 3 == 1) key = uint64_t(i) << 32;
    if (i % 3 == 2) key = uint64_t(1) << 63 | uint64_t(i) << 31 | (i % 7);
    if (added.count(key)) continue;
    table.insert(key, i);
    added[key] = i;
    if (i % 500 == 0) {  // everything added so far is still found after each growth
      for (const auto& [k, v] : added) ASSERT_TRUE(table.find(k) && *table.find(k) == v) << k;
    }
  }
  EXPECT_EQ(table.size(), added.size());
  for (const auto& [k, v] : added) {
    ASSERT_NE(table.find(k), nullptr) << k;
    EXPECT_EQ(*table.find(k), v);
  }
  for (int i = 0; i < 5000; ++i) {
    const uint64_t key = random();  // keys not added (but by a chance of 5000 in 2^64)
    if (!added.count(key)) {
      EXPECT_EQ(table.find(key), nullptr);
    }
  }
  EXPECT_THROW(table.insert(added.begin()->first, 0), std::logic_error);
}

}  // namespace
}  // namespace tessera::platforms
