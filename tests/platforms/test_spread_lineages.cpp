// Lineages of spreads toward every key (platforms/spread_lineages.h): a group's particles at one
// stage are filed on first sight and taken out of the wave (handed over) when seen again, alike
// to the share; small groups stay in the spread; two lineages are apart when they cross no link
// in common. (That the bound with them is the bound over every pair of gateways:
// test_link_bounds.cpp, three-tier trees.)
#include <gtest/gtest.h>

#include <vector>

#include "platforms/spread_lineages.h"

namespace tessera::platforms {
namespace {

constexpr size_t kEnough = SpreadLineages::kFewestParticles;

// A stage's wave: `n` particles of group `group` at devices first, first + 1, ..., each `share`.
std::vector<SpreadParticle> wave(uint32_t group, uint32_t first, size_t n, double share) {
  std::vector<SpreadParticle> w;
  for (size_t i = 0; i < n; ++i) w.push_back({first + uint32_t(i), group, share, 0});
  return w;
}

double total(const std::vector<SpreadParticle>& w) {
  double t = 0;
  for (const SpreadParticle& p : w) t += p.share;
  return t;
}

TEST(SpreadLineages, ALineageSeenAgainIsHandedOverAndTakenOutOfTheWave) {
  SpreadLineages lineages(128);
  std::vector<SpreadParticle> first = wave(7, 100, kEnough, 0.125);
  lineages.take(first);
  EXPECT_TRUE(lineages.handed().empty());
  EXPECT_DOUBLE_EQ(total(first), 0.125 * kEnough);  // filed, left to spread
  ASSERT_EQ(lineages.size(), 1u);

  // Another source's wave: the same group at the same devices with the same shares, in another
  // order, next to a group of its own.
  std::vector<SpreadParticle> again = wave(7, 100, kEnough, 0.125);
  std::swap(again.front(), again.back());
  const std::vector<SpreadParticle> own = wave(9, 100, kEnough, 0.5);
  again.insert(again.end(), own.begin(), own.end());
  lineages.take(again);
  ASSERT_EQ(lineages.handed(), (std::vector<uint32_t>{0}));
  EXPECT_DOUBLE_EQ(total(again), 0.5 * kEnough);  // group 7's shares taken, group 9's left
  EXPECT_EQ(lineages.size(), 2u);                  // group 9 filed
  EXPECT_EQ(lineages[0].group, 7u);
  EXPECT_EQ(lineages[0].wave.size(), kEnough);
  lineages.forget_handed();
  EXPECT_TRUE(lineages.handed().empty());
}

TEST(SpreadLineages, OtherSharesOrDevicesOrTooFewParticlesAreNotTheSameLineage) {
  SpreadLineages lineages(128);
  std::vector<SpreadParticle> w = wave(7, 100, kEnough, 0.125);
  lineages.take(w);
  std::vector<SpreadParticle> other_share = wave(7, 100, kEnough, 0.25);
  lineages.take(other_share);
  std::vector<SpreadParticle> other_devices = wave(7, 101, kEnough, 0.125);
  lineages.take(other_devices);
  std::vector<SpreadParticle> few = wave(7, 100, kEnough - 1, 0.125);
  lineages.take(few);
  lineages.take(few);
  EXPECT_TRUE(lineages.handed().empty());
  EXPECT_EQ(lineages.size(), 3u);  // the small group was never filed
  EXPECT_DOUBLE_EQ(total(few), 0.125 * (kEnough - 1));
}

TEST(SpreadLineages, TwoLineagesAreApartWhenTheyCrossNoLinkInCommon) {
  SpreadLineages lineages(130);
  for (uint32_t group : {1u, 2u, 3u}) {
    std::vector<SpreadParticle> w = wave(group, 0, kEnough, 1.0);
    lineages.take(w);
  }
  ASSERT_EQ(lineages.size(), 3u);
  for (uint32_t id = 0; id < 3; ++id) lineages[id].links.assign(lineages.words(), 0);
  lineages[0].links[0] = 0b0011;
  lineages[1].links[2] = uint64_t(1) << 1;  // link 129
  lineages[2].links[0] = 0b0100;
  lineages[2].links[2] = uint64_t(1) << 1;
  EXPECT_TRUE(lineages.apart(0, 1));
  EXPECT_TRUE(lineages.apart(2, 0));
  EXPECT_FALSE(lineages.apart(1, 2));
  EXPECT_FALSE(lineages.apart(2, 1));
  EXPECT_FALSE(lineages.apart(0, 0));  // handed twice by one source: counted once is wrong
}

}  // namespace
}  // namespace tessera::platforms
