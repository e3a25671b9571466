// Links that cannot fill (Routing::links_that_cannot_fill): the bound it takes over classes of
// gateways is the bound over every pair of gateways, computed here the long way; on trees that
// are not oversubscribed every link between switches is found, on oversubscribed ones the
// leaves' uplinks are not; in-network reduction turns the bound off. Graph level only.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "platforms/platform_config.h"
#include "platforms/platform_file.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tests/support/platform_configs.h"

namespace tessera::platforms {
namespace {

using testing::single_gpu_nodes;

double gateway_capacity(const Graph& g, uint32_t gateway) {
  double c = 0.0;
  for (uint32_t p = 0; p < g.ports(gateway); ++p) c += g.links[g.devices[gateway].port_links[p]].timing.bandwidth_bytes_per_s;
  return c;
}

bool between_switches(const Network& net, uint32_t directed) {
  const GraphLink& l = net.graph.links[directed / 2];
  return l.a >= net.gateways && l.b >= net.gateways;
}

// The senders' and receivers' bounds over every ordered pair of gateways that have a route.
std::vector<bool> every_pair(const PlatformGraph& topology, const Routing& routing) {
  const Network& net = topology.network;
  const Graph& g = net.graph;
  const size_t directed = 2 * g.links.size();
  std::vector<double> by_senders(directed, 0.0), by_receivers(directed, 0.0);
  std::vector<std::vector<double>> most_to(net.gateways, std::vector<double>(directed, 0.0));
  std::vector<Routing::Share> spread;
  Routing::SpreadScratch scratch;
  for (uint32_t s = 0; s < net.gateways; ++s) {
    std::vector<double> most_from(directed, 0.0);
    for (uint32_t t = 0; t < net.gateways; ++t) {
      if (s == t) continue;
      try {
        routing.network_spread(s, t, spread, scratch);
      } catch (const std::exception&) {
        continue;
      }
      for (const Routing::Share& x : spread) {
        const uint32_t l = g.directed_link(x.device, x.port);
        most_from[l] = std::max(most_from[l], x.share);
        most_to[t][l] = std::max(most_to[t][l], x.share);
      }
    }
    for (size_t l = 0; l < directed; ++l) by_senders[l] += gateway_capacity(g, s) * most_from[l];
  }
  for (uint32_t t = 0; t < net.gateways; ++t)
    for (size_t l = 0; l < directed; ++l) by_receivers[l] += gateway_capacity(g, t) * most_to[t][l];
  std::vector<bool> out(directed, false);
  for (size_t l = 0; l < directed; ++l)
    out[l] = between_switches(net, uint32_t(l)) &&
             std::min(by_senders[l], by_receivers[l]) <= g.links[l / 2].timing.bandwidth_bytes_per_s * (1 + 1e-9);
  return out;
}

size_t count(const std::vector<bool>& v) { return size_t(std::count(v.begin(), v.end(), true)); }

size_t links_between_switches(const Network& net) {
  size_t n = 0;
  for (uint32_t l = 0; l < 2 * net.graph.links.size(); ++l) n += between_switches(net, l);
  return n;
}

struct BoundCase {
  const char* name;
  PlatformConfig config;
  bool all_between_switches;  // a tree that is not oversubscribed: every such link
};
void PrintTo(const BoundCase& c, std::ostream* os) { *os << c.name; }

class LinksThatCannotFill : public ::testing::TestWithParam<BoundCase> {};

TEST_P(LinksThatCannotFill, AreThoseTheBoundOverEveryPairOfGatewaysFinds) {
  const BoundCase& c = GetParam();
  const PlatformGraph g = generate_topology(c.config);
  const Routing routing(g);
  const std::vector<bool> found = routing.links_that_cannot_fill(false);
  ASSERT_EQ(found.size(), 2 * g.network.graph.links.size());
  EXPECT_EQ(found, every_pair(g, routing));
  const size_t between = links_between_switches(g.network);
  ASSERT_GT(between, 0u);
  if (c.all_between_switches) EXPECT_EQ(count(found), between);
  else EXPECT_LT(count(found), between);
}

PlatformConfig rails(int nodes, double oversubscription) {
  PlatformConfig c = load_platform("dgx-a100");
  c.nodes = nodes;
  c.network.radix = 8;
  c.network.oversubscription = oversubscription;
  c.validate();
  return c;
}

PlatformConfig torus() {
  PlatformConfig c = load_platform("torus-3d");
  c.nodes = 27;
  c.network.torus_dims = {3, 3, 3};
  c.validate();
  return c;
}

PlatformConfig dragonfly() {
  PlatformConfig c = single_gpu_nodes(36, Topology::FatTree, 8, 1.0, 2);
  c.network.topology = Topology::Dragonfly;
  c.network.dragonfly_groups = 4;
  c.network.dragonfly_routers_per_group = 3;
  c.network.dragonfly_global_links_per_router = 1;
  c.validate();
  return c;
}

// Gateways cabled to two leaves each: senders of classes of their own.
PlatformConfig dual_homed() {
  return load_platform(std::string(TESSERA_BAD_PLATFORMS) + "/../good/dual-homed-links.yaml");
}

INSTANTIATE_TEST_SUITE_P(
    Networks, LinksThatCannotFill,
    ::testing::Values(BoundCase{"two_tiers", single_gpu_nodes(16, Topology::FatTree, 8, 1.0, 2), true},
                      BoundCase{"three_tiers", single_gpu_nodes(64, Topology::FatTree, 8, 1.0, 3), true},
                      // Every pod's sources reach the 16 cores alike: spread once (SpreadLineages).
                      BoundCase{"three_full_tiers", single_gpu_nodes(128, Topology::FatTree, 8, 1.0, 3), true},
                      BoundCase{"oversubscribed_3_to_1", single_gpu_nodes(24, Topology::FatTree, 8, 3.0, 2), false},
                      BoundCase{"rail_optimized", rails(12, 1.0), true},
                      BoundCase{"rail_optimized_16_nodes", rails(16, 1.0), true},
                      BoundCase{"rail_optimized_oversubscribed", rails(12, 3.0), false},
                      BoundCase{"torus", torus(), false}, BoundCase{"dragonfly", dragonfly(), false},
                      BoundCase{"dual_homed", dual_homed(), false}),
    [](const ::testing::TestParamInfo<BoundCase>& info) { return std::string(info.param.name); });

// On an oversubscribed leaf, what its gateways send can fill its uplinks: none is left out.
TEST(LinksThatCannotFillOn, AnOversubscribedLeafKeepsItsUplinks) {
  const PlatformGraph g = generate_topology(single_gpu_nodes(24, Topology::FatTree, 8, 3.0, 2));
  const Routing routing(g);
  const std::vector<bool> found = routing.links_that_cannot_fill(false);
  const Network& net = g.network;
  size_t uplinks = 0;
  for (uint32_t x = net.gateways; x < net.graph.devices.size(); ++x) {
    bool leaf = false;
    for (uint32_t p = 0; p < net.graph.ports(x); ++p) leaf |= net.graph.neighbor(x, p) < net.gateways;
    if (!leaf) continue;
    for (uint32_t p = 0; p < net.graph.ports(x); ++p)
      if (net.graph.neighbor(x, p) >= net.gateways) {
        ++uplinks;
        EXPECT_FALSE(found[net.graph.directed_link(x, p)]) << net.graph.devices[x].name << " port " << p;
      }
  }
  EXPECT_GT(uplinks, 0u);
}

TEST(LinksThatCannotFillOn, ANetworkThatReducesHasNone) {
  const PlatformGraph g = generate_topology(single_gpu_nodes(16, Topology::FatTree, 8, 1.0, 2));
  const Routing routing(g);
  EXPECT_TRUE(routing.links_that_cannot_fill(true).empty());
}

}  // namespace
}  // namespace tessera::platforms
