// Network legs stored in pieces, each piece once (platforms/leg_pieces.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "platforms/leg_pieces.h"

namespace tessera::platforms {
namespace {

struct Listed {
  std::vector<uint32_t> links;
  std::vector<double> shares;
};

Listed read(const LegPieces& pieces, const LegPieces::List& list) {
  Listed out;
  pieces.view(list).each([&](uint32_t l, double s) {
    out.links.push_back(l);
    out.shares.push_back(s);
  });
  return out;
}

// A run of links as a leg has them: ids in order, from `first`, every `stride`-th.
Listed run(uint32_t first, uint32_t count, uint32_t stride, double share) {
  Listed out;
  for (uint32_t i = 0; i < count; ++i) {
    out.links.push_back(first + i * stride);
    out.shares.push_back(share);
  }
  return out;
}

Listed joined(std::initializer_list<Listed> parts) {
  Listed out;
  for (const Listed& p : parts) {
    out.links.insert(out.links.end(), p.links.begin(), p.links.end());
    out.shares.insert(out.shares.end(), p.shares.begin(), p.shares.end());
  }
  return out;
}

TEST(LegPieces, EveryListReadsBackAsStoredWhateverWasStoredBetween) {
  LegPieces pieces;
  std::mt19937 random(3);
  std::vector<Listed> stored;
  std::vector<LegPieces::List> lists;
  for (int n = 0; n < 300; ++n) {
    Listed l;
    const uint32_t count = random() % 400;
    for (uint32_t i = 0; i < count; ++i) {
      l.links.push_back(random() % 5000);
      l.shares.push_back(1.0 / double(1 + random() % 64));
    }
    lists.push_back(pieces.store(l.links, l.shares));
    stored.push_back(l);
  }
  for (size_t n = 0; n < stored.size(); ++n) {
    const Listed got = read(pieces, lists[n]);
    EXPECT_EQ(got.links, stored[n].links) << n;
    EXPECT_EQ(got.shares, stored[n].shares) << n;
    EXPECT_EQ(pieces.view(lists[n]).count, stored[n].links.size());
    std::vector<uint32_t> links{7};  // append adds after what is there
    std::vector<double> shares{1.0};
    pieces.append(lists[n], links, shares);
    EXPECT_EQ(std::vector<uint32_t>(links.begin() + 1, links.end()), stored[n].links);
    EXPECT_EQ(std::vector<double>(shares.begin() + 1, shares.end()), stored[n].shares);
  }
}

TEST(LegPieces, ARunManyListsCrossIsStoredAboutOnce) {
  // Legs out of one pod: each its own leaf's uplinks, then the pod's spines up to every core
  // alike, then every core down to one of four pods.
  LegPieces pieces;
  const Listed spines_to_cores = run(100000, 1024, 3, 1.0 / 1024);
  std::vector<Listed> down;
  for (uint32_t pod = 0; pod < 4; ++pod) down.push_back(run(200000 + pod, 1024, 7, 1.0 / 1024));
  std::vector<Listed> legs;
  std::vector<LegPieces::List> lists;
  size_t links = 0;
  for (uint32_t leaf = 0; leaf < 32; ++leaf)
    for (uint32_t pod = 0; pod < 4; ++pod) {
      legs.push_back(joined({run(1000 + 32 * leaf, 32, 1, 1.0 / 32), spines_to_cores, down[pod]}));
      lists.push_back(pieces.store(legs.back().links, legs.back().shares));
      links += legs.back().links.size();
    }
  // 128 legs of 2,080 links each; what is stored is about one of each run and the legs' pieces.
  EXPECT_EQ(links, 128u * 2080u);
  EXPECT_LT(pieces.entries(), links / 8);
  for (size_t n = 0; n < legs.size(); ++n) {
    const Listed got = read(pieces, lists[n]);
    EXPECT_EQ(got.links, legs[n].links);
    EXPECT_EQ(got.shares, legs[n].shares);
  }
}

TEST(LegPieces, TheSameLinksWithOtherSharesAreAnotherPiece) {
  LegPieces pieces;
  const Listed half = run(10, 40, 1, 0.5), quarter = run(10, 40, 1, 0.25);
  const LegPieces::List a = pieces.store(half.links, half.shares);
  const size_t after_first = pieces.entries();
  const LegPieces::List b = pieces.store(quarter.links, quarter.shares);
  EXPECT_EQ(after_first, 40u + a.count);
  EXPECT_EQ(pieces.entries(), 2 * after_first);  // the same cuts, none of the pieces shared
  EXPECT_EQ(read(pieces, a).shares, half.shares);
  EXPECT_EQ(read(pieces, b).shares, quarter.shares);
  const size_t before = pieces.entries();
  const LegPieces::List again = pieces.store(half.links, half.shares);  // stored before: its pieces named only
  EXPECT_EQ(pieces.entries(), before + again.count);
  EXPECT_EQ(read(pieces, again).shares, half.shares);
}

TEST(LegPieces, AnEmptyListHasNoLinks) {
  LegPieces pieces;
  const LegPieces::List list = pieces.store({}, {});
  EXPECT_EQ(list.count, 0u);
  EXPECT_EQ(pieces.view(list).count, 0u);
  EXPECT_TRUE(read(pieces, list).links.empty());
  EXPECT_EQ(pieces.entries(), 0u);
}

}  // namespace
}  // namespace tessera::platforms
