// Every key's hops found at once (platforms/every_key_hops.h) against the searches key by key:
// the same lists at every switch toward every key, on the network shapes that take it, and the
// shapes that do not keep their searches. Graph level only, no SystemC kernel.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "platforms/every_key_hops.h"
#include "platforms/platform_file.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tests/support/platform_configs.h"

namespace tessera::platforms {
namespace {

TEST(TransposeBits, MovesBitJOfRowIToBitIOfRowJ) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    uint64_t rows[64], expected[64] = {};
    for (uint64_t& r : rows) r = random() & random();  // (sparse and dense bits both)
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j)
        if (rows[i] >> j & 1) expected[j] |= uint64_t(1) << i;
    transpose_bits(rows);
    for (int j = 0; j < 64; ++j) ASSERT_EQ(rows[j], expected[j]) << "row " << j << ", trial " << trial;
  }
}

// Every gateway's spread toward every other gateway (the lists of every switch on the way,
// weighted and in order), key by key and with every key's hops found at once.
void expect_the_same_spreads(const PlatformConfig& c, const std::string& what) {
  const PlatformGraph g = generate_topology(c);
  const Routing by_key(g), at_once(g);
  ASSERT_TRUE(at_once.prepare_every_column()) << what;
  std::vector<Routing::Share> a, b;
  Routing::SpreadScratch scratch;
  size_t compared = 0;
  for (uint32_t from = 0; from < g.network.gateways; ++from)
    for (uint32_t to = 0; to < g.network.gateways; ++to) {
      if (from == to) continue;
      by_key.network_spread(from, to, a, scratch);
      at_once.network_spread(from, to, b, scratch);
      ASSERT_EQ(a.size(), b.size()) << what << ": " << from << " -> " << to;
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].device, b[i].device) << what << ": " << from << " -> " << to;
        ASSERT_EQ(a[i].port, b[i].port) << what << ": " << from << " -> " << to;
        ASSERT_EQ(a[i].share, b[i].share) << what << ": " << from << " -> " << to;
      }
      compared += a.size();
    }
  EXPECT_GT(compared, size_t(g.network.gateways) * 2) << what;
  EXPECT_EQ(by_key.column_entries(), at_once.column_entries()) << what;
}

TEST(EveryKeyHops, GiveEverySwitchTheListsOfTheSearchKeyByKey) {
  using testing::single_gpu_nodes;
  expect_the_same_spreads(single_gpu_nodes(16, Topology::FatTree, 4, 1.0, 3), "three-tier fat tree");
  expect_the_same_spreads(single_gpu_nodes(16, Topology::FatTree, 12, 2.0, 2), "two-tier 2:1 fat tree");
  expect_the_same_spreads(single_gpu_nodes(48, Topology::FatTree, 12, 2.0, 3), "three-tier 2:1 fat tree");
  expect_the_same_spreads(load_platform("dgx-h100", {"nodes=8"}), "rail-optimized, two tiers");
  expect_the_same_spreads(load_platform("dgx-a100", {"nodes=32", "network.tiers=3", "network.radix=16"}),
                          "rail-optimized, three tiers");
  const std::string links = std::string(TESSERA_BAD_PLATFORMS) + "/../good/";
  expect_the_same_spreads(load_platform(links + "two-leaf-links.yaml"), "links of two bandwidths");
  expect_the_same_spreads(load_platform(links + "ring-of-switches-links.yaml"), "a ring of six switches");
  expect_the_same_spreads(load_platform(links + "odd-ring-links.yaml"), "a ring of five with a chord");
}

TEST(EveryKeyHops, KeepTheSearchKeyByKeyWhereTheNetworkRulesItsRoutesOrAGatewayHasSeveralUplinks) {
  const PlatformGraph torus = generate_topology(load_platform("torus-3d", {"nodes=8", "network.torus_dims=[2,4]"}));
  EXPECT_FALSE(Routing(torus).prepare_every_column());
  const PlatformGraph dragonfly = generate_topology(
      load_platform("dgx-h100", {"nodes=16", "network.topology=dragonfly", "network.dragonfly_groups=4",
                                 "network.dragonfly_routers_per_group=2", "network.dragonfly_global_links_per_router=2"}));
  EXPECT_FALSE(Routing(dragonfly).prepare_every_column());
  // An NVLink network's gateways are its GPUs, each with links to several switches: their own
  // choices come from the distances, searched key by key.
  const PlatformGraph nvlink = generate_topology(load_platform("nvl-256", {"nodes=4"}));
  ASSERT_GT(nvlink.network.graph.ports(0), 1u);
  EXPECT_FALSE(Routing(nvlink).prepare_every_column());
}

}  // namespace
}  // namespace tessera::platforms
