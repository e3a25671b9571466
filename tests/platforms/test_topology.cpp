// Generated topologies against closed forms: bisection bandwidth of fat trees, rail-optimized
// networks and tori; routes that end where they should, keep to NVLink inside NVLink nodes and
// keep the rail across a rail-optimized network; results that follow the parameters that should
// move them and ignore those that should not. Graph level only, no SystemC kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "platforms/analysis.h"
#include "platforms/flow_paths.h"
#include "platforms/platform_config.h"
#include "platforms/platform_file.h"
#include "platforms/routing.h"
#include "platforms/topology.h"
#include "tests/support/platform_configs.h"

namespace tessera::platforms {
namespace {

using testing::single_gpu_nodes;

double nic_bandwidth(const PlatformConfig& c) { return c.node.nics.line_rate_gbit_per_s * 1e9 / 8.0; }
double network_link_bandwidth(const PlatformConfig& c) { return c.network.link.bandwidth_gb_per_s * 1e9; }

// Leaf ports as the generator splits them: down = floor(radix*o/(1+o)), up = radix - down.
int leaf_down(const PlatformConfig& c) {
  const double o = c.network.oversubscription;
  return static_cast<int>(c.network.radix * o / (1 + o) + 1e-9);
}

double bisection(const PlatformConfig& c) { return bisection_bandwidth(generate_topology(c)); }

// --- Bisection bandwidth against closed forms -------------------------------------------------

struct FatTreeCase {
  const char* name;
  int radix;
  double oversubscription;
  int tiers;
  int leaves;  // endpoints fill this many leaves exactly
};
void PrintTo(const FatTreeCase& f, std::ostream* os) { *os << f.name; }

class FatTreeBisection : public ::testing::TestWithParam<FatTreeCase> {};

TEST_P(FatTreeBisection, IsHalfTheEndpointsOverTheOversubscription) {
  const FatTreeCase& f = GetParam();
  PlatformConfig probe = single_gpu_nodes(2, Topology::FatTree, f.radix, f.oversubscription, f.tiers);
  const int down = leaf_down(probe);
  const int up = f.radix - down;
  // The parameters are chosen so that down:up is exactly the oversubscription.
  ASSERT_DOUBLE_EQ(double(down) / up, f.oversubscription);
  const int endpoints = f.leaves * down;
  const PlatformConfig c = single_gpu_nodes(endpoints, Topology::FatTree, f.radix, f.oversubscription, f.tiers);
  ASSERT_DOUBLE_EQ(nic_bandwidth(c), network_link_bandwidth(c));
  const double B = nic_bandwidth(c);
  // The halves fill whole leaves (and, with three tiers, whole pods of radix/2 leaves): what
  // crosses is limited by the first half's leaf uplinks, E/2 endpoints x B / o.
  const double expected = endpoints * B / 2.0 / f.oversubscription;
  EXPECT_NEAR(bisection(c), expected, 1e-6 * expected) << "E=" << endpoints << " down=" << down << " up=" << up;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FatTreeBisection,
    ::testing::Values(FatTreeCase{"two_tier_nonblocking", 16, 1.0, 2, 4},   // 8 down, 8 up
                      FatTreeCase{"two_tier_2to1", 12, 2.0, 2, 4},          // 8 down, 4 up
                      FatTreeCase{"two_tier_3to1", 16, 3.0, 2, 2},          // 12 down, 4 up
                      FatTreeCase{"three_tier_nonblocking", 8, 1.0, 3, 16},  // 4 pods of 4 leaves
                      FatTreeCase{"three_tier_2to1", 12, 2.0, 3, 12}),       // 2 pods of 6 leaves
    [](const ::testing::TestParamInfo<FatTreeCase>& info) { return std::string(info.param.name); });

TEST(RailOptimizedBisection, IsHalfTheNodesNicsOverTheOversubscription) {
  for (const auto& [radix, o] : std::vector<std::pair<int, double>>{{16, 1.0}, {24, 2.0}}) {
    PlatformConfig c = load_platform("dgx-h100");
    c.network.radix = radix;
    c.network.oversubscription = o;
    const int down = leaf_down(c);
    c.nodes = 2 * down;  // two groups of rail leaves; the halves are the groups
    c.validate();
    const double B = nic_bandwidth(c);
    const double expected = c.nodes * c.node.nics.count * B / 2.0 / o;
    SCOPED_TRACE("radix " + std::to_string(radix) + " o " + std::to_string(o));
    EXPECT_NEAR(bisection(c), expected, 1e-6 * expected);
  }
}

// The switches of a generated network, each with its physical ports (the lanes of its links)
// over the radix; empty when every switch fits.
std::string switches_over_radix(const PlatformConfig& c) {
  const PlatformGraph g = generate_topology(c);
  const Graph& net = g.network.graph;
  std::string over;
  for (uint32_t x = g.network.gateways; x < net.devices.size(); ++x)
    if (net.physical_ports(x) > static_cast<uint32_t>(c.network.radix))
      over += " " + net.devices[x].name + " (" + std::to_string(net.physical_ports(x)) + " ports)";
  return over;
}

TEST(ClosNetworks, NoSwitchHasMorePortsThanItsRadix) {
  // Every node count a radix fits, at 1:1 to 4:1, with two tiers where they suffice and three
  // beyond; fat trees of one-NIC nodes and rail-optimized DGX H100s.
  int checked = 0;
  for (const int radix : {6, 8, 12, 16, 40})
    for (const double o : {1.0, 1.5, 2.0, 3.0, 4.0})
      for (const int tiers : {0, 2}) {
        PlatformConfig probe = single_gpu_nodes(1, Topology::FatTree, radix, o, tiers);
        const int down = leaf_down(probe);
        const int most_leaves = tiers == 2 ? radix : radix * (radix / 2);
        for (int nodes = 1; nodes <= most_leaves * down; nodes += std::max(1, nodes / 8)) {
          const PlatformConfig c = single_gpu_nodes(nodes, Topology::FatTree, radix, o, tiers);
          EXPECT_EQ(switches_over_radix(c), "") << "fat tree, radix " << radix << ", " << o << ":1, tiers "
                                                << tiers << ", " << nodes << " nodes";
          ++checked;
        }
        PlatformConfig rails = load_platform("dgx-h100");
        rails.network.radix = radix;
        rails.network.oversubscription = o;
        rails.network.tiers = tiers;
        const int most_groups = tiers == 2 ? radix / 8 : radix / 2 * radix / 8;  // 8 rail leaves a group
        for (int nodes = 1; nodes <= most_groups * down; nodes += std::max(1, nodes / 8)) {
          rails.nodes = nodes;
          EXPECT_EQ(switches_over_radix(rails), "") << "rail-optimized, radix " << radix << ", " << o
                                                    << ":1, tiers " << tiers << ", " << nodes << " nodes";
          ++checked;
        }
      }
  EXPECT_GT(checked, 1000);
}

TEST(NvlinkNetwork, NoSecondTierSwitchHasMorePortsThanItsRadix) {
  for (int nodes = 1; nodes <= 64; ++nodes) {
    const PlatformConfig c = load_platform("nvl-256", {"nodes=" + std::to_string(nodes)});
    EXPECT_EQ(switches_over_radix(c), "") << nodes << " nodes";
  }
}

TEST(TorusBisection, IsTwiceTheCrossSectionOfTheLastDimension) {
  for (const std::vector<int>& dims :
       std::vector<std::vector<int>>{{4, 4}, {4, 6}, {4, 4, 4}, {2, 4, 8}, {3, 4, 4}}) {
    PlatformConfig c = load_platform("torus-3d");
    c.network.torus_dims = dims;
    c.nodes = 1;
    for (int d : dims) c.nodes *= d;
    c.validate();
    // The natural halves cut every ring along the last dimension twice (at its middle and at
    // the wrap-around); each cut crosses one link per position of the other dimensions.
    double cross_section = 1;
    for (size_t i = 0; i + 1 < dims.size(); ++i) cross_section *= dims[i];
    const double expected = 2.0 * cross_section * network_link_bandwidth(c);
    SCOPED_TRACE(::testing::PrintToString(dims));
    EXPECT_NEAR(bisection(c), expected, 1e-6 * expected);
  }
}

TEST(TorusBisection, ARingOfTwoIsOneLink) {
  PlatformConfig c = load_platform("torus-3d");
  c.network.torus_dims = {4, 2};
  c.nodes = 8;
  c.validate();
  EXPECT_NEAR(bisection(c), 4 * network_link_bandwidth(c), 1.0);
}

TEST(NvlinkNetworkBisection, IsHalfTheNodesGpuNvlinksOverTheOversubscription) {
  const PlatformConfig c = load_platform("nvl-256");
  const double B = c.network.link.bandwidth_gb_per_s * 1e9;
  const double expected =
      c.nodes / 2.0 * c.node.gpus * c.gpu.nvlink_ports * B / c.network.oversubscription;
  EXPECT_NEAR(bisection(c), expected, 1e-6 * expected);
}

TEST(SingleNodeBisection, IsHalfTheGpusNvlinkPlusTheirPcieSwitchesHostLinks) {
  // One node without a network: the first half of the GPUs reach the second through their
  // NVLinks and, through the host, through the uplinks of their PCIe switches.
  for (const char* name : {"dgx-a100", "dgx-h100", "hgx-h200", "pcie-8gpu"}) {
    const PlatformConfig c = load_platform(name, {"network.topology=none"});
    const double nvlink = c.node.nvlink.switches > 0 ? c.gpu.nvlink_ports * c.node.nvlink.link.bandwidth_gb_per_s * 1e9 : 0;
    const double host = c.node.pcie.host_link.bandwidth_gb_per_s * 1e9;
    EXPECT_NEAR(bisection(c), c.node.gpus / 2.0 * nvlink + c.node.pcie.switches / 2.0 * host, 1.0) << name;
  }
}

// --- Routing --------------------------------------------------------------------------------

std::string gpu_name(const PlatformGraph& g, uint32_t gpu) {
  return "node" + std::to_string(gpu / g.node.gpus) + ".gpu" + std::to_string(gpu % g.node.gpus);
}

void expect_every_route_ends_at_its_destination(const PlatformConfig& c) {
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  for (uint32_t s = 0; s < g.gpu_count(); ++s)
    for (uint32_t d = 0; d < g.gpu_count(); ++d) {
      if (s == d) continue;
      const std::vector<Hop> hops = route(g, routing, s, d);
      ASSERT_FALSE(hops.empty()) << s << " -> " << d;
      EXPECT_EQ(hops.front().from, gpu_name(g, s));
      EXPECT_EQ(hops.back().to, gpu_name(g, d));
      for (size_t i = 1; i < hops.size(); ++i) EXPECT_EQ(hops[i].from, hops[i - 1].to);
      // No GPU forwards: GPUs appear only at the ends.
      for (size_t i = 0; i + 1 < hops.size(); ++i)
        EXPECT_EQ(hops[i].to.find(".gpu"), std::string::npos) << s << " -> " << d;
    }
}

TEST(Routes, EveryGpuPairEndsAtItsDestination) {
  expect_every_route_ends_at_its_destination(load_platform("pcie-8gpu"));
  expect_every_route_ends_at_its_destination(load_platform("dgx-a100", {"nodes=2"}));
  expect_every_route_ends_at_its_destination(
      load_platform("pcie-8gpu", {"nodes=4", "network.topology=fat-tree", "network.radix=4"}));
  expect_every_route_ends_at_its_destination(load_platform("torus-3d", {"nodes=4", "network.torus_dims=[2,2]"}));
  expect_every_route_ends_at_its_destination(
      load_platform("nvl-256", {"nodes=2"}));
  expect_every_route_ends_at_its_destination(
      load_platform(std::string(TESSERA_BAD_PLATFORMS) + "/../good/two-leaf-links.yaml"));
  expect_every_route_ends_at_its_destination(single_gpu_nodes(16, Topology::FatTree, 4, 1.0, 3));
}

// The coordinates of a torus switch ("torus(1,3,0)"); empty for any other device.
std::vector<int> torus_coordinates(const std::string& name) {
  std::vector<int> c;
  if (name.rfind("torus(", 0) != 0) return c;
  std::istringstream in(name.substr(6));
  int v = 0;
  char separator = 0;
  while (in >> v >> separator) c.push_back(v);
  return c;
}

TEST(Routes, ATorusRoutesInDimensionOrderOnShortestPaths) {
  // Dimension-order routing: the switches a chunk crosses change one coordinate at a time, the
  // first dimension first (no cycle of turns between dimensions, the deadlock of shortest-path
  // ECMP on a torus); each ring the short way round (both ways where they tie).
  for (const char* dims : {"[4,4,4]", "[3,5]", "[2,4,3]"}) {
    int nodes = 1;
    for (const char c : std::string(dims))
      if (c >= '0' && c <= '9') nodes *= c - '0';
    const PlatformConfig c = load_platform("torus-3d", {"nodes=" + std::to_string(nodes), std::string("network.torus_dims=") + dims});
    const PlatformGraph g = generate_topology(c);
    const Routing routing(g);
    const std::vector<int>& size = c.network.torus_dims;
    for (uint32_t s : {0u, g.node.gpus * uint32_t(nodes / 2) + 3})
      for (uint32_t node = 0; node < uint32_t(nodes); ++node)
        for (uint32_t chunk = 0; chunk < 4; ++chunk) {
          const uint32_t d = node * g.node.gpus + (chunk % g.node.gpus);
          if (d / g.node.gpus == s / g.node.gpus) continue;
          std::vector<std::vector<int>> path;
          for (const Hop& h : route(g, routing, s, d, chunk))
            if (!torus_coordinates(h.to).empty()) path.push_back(torus_coordinates(h.to));
          ASSERT_GE(path.size(), 2u) << dims << " " << s << " -> " << d;
          int distance = 0, last_dimension = -1;
          for (size_t k = 0; k < size.size(); ++k) {
            const int delta = std::abs(path.front()[k] - path.back()[k]);
            distance += std::min(delta, size[k] - delta);
          }
          for (size_t i = 1; i < path.size(); ++i) {
            int changed = -1, count = 0;
            for (size_t k = 0; k < size.size(); ++k)
              if (path[i][k] != path[i - 1][k]) changed = int(k), ++count;
            ASSERT_EQ(count, 1) << dims << " " << s << " -> " << d;
            EXPECT_GE(changed, last_dimension) << dims << " " << s << " -> " << d << " chunk " << chunk;
            last_dimension = changed;
          }
          EXPECT_EQ(int(path.size()) - 1, distance) << dims << " " << s << " -> " << d;
        }
  }
}

TEST(Routes, ADragonflyRoutesLocalGlobalLocal) {
  // At most one local hop, one global link into the destination's group, one local hop there:
  // never two global links through a third group, which a shortest path may take (here router
  // 0 of group 0 has no global link into group 3 and reached it through group 1 or 2).
  const PlatformConfig c =
      load_platform("dgx-h100", {"nodes=16", "network.topology=dragonfly", "network.dragonfly_groups=4",
                                 "network.dragonfly_routers_per_group=2", "network.dragonfly_global_links_per_router=2"});
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  auto group = [](const std::string& name) { return name.rfind("group", 0) == 0 ? std::stoi(name.substr(5)) : -1; };
  int two_routers = 0;
  for (uint32_t s = 0; s < g.gpu_count(); s += 3)
    for (uint32_t d = 0; d < g.gpu_count(); d += 5) {
      if (s / g.node.gpus == d / g.node.gpus) continue;
      std::vector<int> groups;  // of the routers crossed, in order
      for (const Hop& h : route(g, routing, s, d, s + d))
        if (group(h.to) >= 0) groups.push_back(group(h.to));
      ASSERT_FALSE(groups.empty()) << s << " -> " << d;
      int global = 0, local = 0;
      for (size_t i = 1; i < groups.size(); ++i) (groups[i] != groups[i - 1] ? global : local) += 1;
      EXPECT_LE(global, 1) << s << " -> " << d;
      EXPECT_LE(int(groups.size()), 4) << s << " -> " << d;
      EXPECT_EQ(groups.front() == groups.back() ? 0 : 1, global) << s << " -> " << d;
      EXPECT_LE(local, 2) << s << " -> " << d;
      two_routers += groups.size() >= 2;
    }
  EXPECT_GT(two_routers, 0);
}

TEST(Routes, IntraNodeRoutesOnNvlinkPlatformsNeverUsePcie) {
  for (const char* name : {"dgx-a100", "dgx-h100", "hgx-h200", "nvl-256"}) {
    const PlatformConfig c = load_platform(name, {"nodes=2"});
    const PlatformGraph g = generate_topology(c);
    const Routing routing(g);
    for (uint32_t node = 0; node < 2; ++node)
      for (uint32_t a = 0; a < g.node.gpus; ++a)
        for (uint32_t b = 0; b < g.node.gpus; ++b) {
          if (a == b) continue;
          const uint32_t s = node * g.node.gpus + a, d = node * g.node.gpus + b;
          const std::vector<Hop> hops = route(g, routing, s, d);
          ASSERT_EQ(hops.size(), 2u) << name << " " << s << " -> " << d;  // GPU, NVSwitch, GPU
          for (const Hop& h : hops) EXPECT_EQ(h.link_kind, "nvlink") << name << " " << h.from << " -> " << h.to;
        }
  }
}

// What crosses a node's links: on a DGX, traffic between its GPUs keeps to NVLink and traffic in
// and out of the node to PCIe, so they never share a link; on pcie-8gpu both cross the PCIe
// switches' uplinks; on nvl-256 the NVSwitches' links carry both.
TEST(Routes, NodeLinkUseSeparatesTrafficBetweenGpusFromTrafficThroughGateways) {
  const auto shared = [](const std::vector<uint8_t>& use) {
    int between = 0, both = 0;
    for (uint8_t u : use) {
      between += (u & Routing::kBetweenGpus) != 0;
      both += u == (Routing::kBetweenGpus | Routing::kThroughGateways);
    }
    return std::make_pair(between, both);
  };
  for (const char* name : {"dgx-a100", "dgx-h100", "hgx-h200"}) {
    const PlatformGraph g = generate_topology(load_platform(name, {"nodes=2"}));
    const Routing routing(g);
    const std::vector<uint8_t> use = routing.node_link_use();
    ASSERT_EQ(use.size(), 2 * g.node.graph.links.size());
    const auto [between, both] = shared(use);
    EXPECT_GT(between, 0) << name;
    EXPECT_EQ(both, 0) << name;
    for (size_t t = 0; t < use.size(); ++t) {
      const GraphLink& l = g.node.graph.links[t / 2];
      if (use[t] & Routing::kBetweenGpus) {
        EXPECT_EQ(l.kind, LinkKind::Nvlink) << name << " link " << t;
      }
      if (use[t] & Routing::kThroughGateways) {
        EXPECT_EQ(l.kind, LinkKind::Pcie) << name << " link " << t;
      }
    }
  }
  for (const PlatformConfig& c :
       {load_platform("pcie-8gpu", {"nodes=4", "network.topology=fat-tree", "network.radix=4"}),
        load_platform("nvl-256", {"nodes=2"})}) {
    const PlatformGraph g = generate_topology(c);
    const Routing routing(g);
    EXPECT_GT(shared(routing.node_link_use()).second, 0) << c.name;
  }
}

TEST(Routes, PcieOnlyNodesCrossTheHostBetweenPcieSwitches) {
  const PlatformConfig c = load_platform("pcie-8gpu");
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  // Same switch: GPU -> switch -> GPU. Across switches: through the root complex.
  EXPECT_EQ(route(g, routing, 0, 3).size(), 2u);
  const std::vector<Hop> across = route(g, routing, 0, 4);
  ASSERT_EQ(across.size(), 4u);
  EXPECT_EQ(across[1].to, "node0.host");
  for (const Hop& h : across) EXPECT_EQ(h.link_kind, "pcie");
}

TEST(Routes, RailOptimizedNetworkKeepsTheRailOrCrossesRailsToANicNearTheDestination) {
  // 16 DGX H100 on radix-16 leaves: two groups of 8 nodes, so routes between the groups cross
  // the spines. A transfer leaves on a NIC near its GPU (on its PCIe switch) and arrives on NIC
  // k of the other node when NIC k is near the destination GPU too (it keeps its rail);
  // otherwise on a NIC near the destination, changing rails in the spines. Never through the
  // destination's CPU (Routing::entry_gateway).
  const PlatformConfig c = load_platform("dgx-h100", {"nodes=16", "network.radix=16"});
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const uint32_t per_switch = g.node.gpus / uint32_t(c.node.pcie.switches);  // GPUs (and NICs) per PCIe switch
  auto pcie_switch = [&](const std::string& nic) { return std::stoul(nic.substr(nic.find(".nic") + 4)) / per_switch; };
  int through_spines = 0, across_rails = 0;
  for (uint32_t s = 0; s < g.node.gpus; ++s)
    for (uint32_t d = g.node.gpus; d < g.gpu_count(); ++d) {
      const std::vector<Hop> hops = route(g, routing, s, d);
      std::vector<std::string> nics;
      for (const Hop& h : hops) {
        EXPECT_EQ(h.to.find(".host"), std::string::npos) << s << " -> " << d << " crosses " << h.to;
        for (const std::string& end : {h.from, h.to})
          if (end.find(".nic") != std::string::npos && (nics.empty() || nics.back() != end)) nics.push_back(end);
      }
      ASSERT_EQ(nics.size(), 2u) << s << " -> " << d;
      EXPECT_EQ(pcie_switch(nics[0]), s / per_switch) << nics[0];
      EXPECT_EQ(pcie_switch(nics[1]), d % g.node.gpus / per_switch) << nics[1];
      const std::string k0 = nics[0].substr(nics[0].find(".nic")), k1 = nics[1].substr(nics[1].find(".nic"));
      const bool same_switch = s / per_switch == d % g.node.gpus / per_switch;
      if (same_switch) {
        EXPECT_EQ(k0, k1) << nics[0] << " -> " << nics[1];
      }
      std::set<std::string> rails;
      for (const Hop& h : hops) {
        if (h.to.rfind("rail", 0) == 0) rails.insert(h.to.substr(0, h.to.find('.')));
        through_spines += h.to.rfind("spine", 0) == 0;
      }
      if (k0 == k1) {
        EXPECT_EQ(rails, std::set<std::string>{"rail" + k0.substr(4)}) << "a route changes rails";
      } else {
        EXPECT_EQ(rails, (std::set<std::string>{"rail" + k0.substr(4), "rail" + k1.substr(4)}));
        ++across_rails;
      }
    }
  EXPECT_GT(through_spines, 0);
  EXPECT_GT(across_rails, 0);
}

TEST(Routes, RailsThatNothingJoinsAreKept) {
  // A link list with two rails and no spine: GPU 0 of node 0 (NIC 0) to GPU 1 of node 1 (NIC 1)
  // cannot change rails, so it enters by node 1's NIC 0 and crosses its CPU.
  const PlatformGraph g =
      generate_topology(load_platform(std::string(TESSERA_BAD_PLATFORMS) + "/../good/two-rails-apart.yaml"));
  const Routing routing(g);
  std::vector<std::string> path;
  for (const Hop& h : route(g, routing, 0, 3)) path.push_back(h.from + " -> " + h.to);
  EXPECT_NE(std::find(path.begin(), path.end(), "rail0 -> node1.nic0"), path.end());
  EXPECT_NE(std::find_if(path.begin(), path.end(), [](const std::string& p) { return p.find("node1.host") != std::string::npos; }),
            path.end());
  for (const std::string& p : path) EXPECT_EQ(p.find("rail1"), std::string::npos) << p;
}

// Hops counted by (device, port it leaves through), over chunks 0..chunks-1 of one transfer.
std::map<std::string, std::map<uint32_t, int>> ports_taken(const PlatformGraph& g, const Routing& routing,
                                                           uint32_t source, uint32_t destination, uint32_t chunks) {
  std::map<std::string, std::map<uint32_t, int>> taken;
  for (uint32_t c = 0; c < chunks; ++c)
    for (const Hop& h : route(g, routing, source, destination, c)) ++taken[h.from][h.port];
  return taken;
}

TEST(Routes, ChunksThatTakeAGatewaySpreadEvenlyOverItsUplinks) {
  // nvl-256 cut to 2 nodes: a GPU's chunks pick an NVSwitch plane in proportion to its NVLinks
  // (5, 4, 4, 5 of 18), then one of that switch's 20, 16, 16, 20 uplinks to the plane's one
  // second-tier switch, which has as many links down to the other node's switch.
  const PlatformConfig c = load_platform("nvl-256", {"nodes=2"});
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const std::vector<int> uplinks = {20, 16, 16, 20};
  for (uint32_t gpu = 0; gpu < 8; ++gpu) {
    const auto taken = ports_taken(g, routing, gpu, 8 + gpu, 18 * 20);
    for (uint32_t s = 0; s < 4; ++s) {
      // Up from node 0's switch s and down from its second-tier switch: every link, evenly.
      const std::string up = "node0.nvswitch" + std::to_string(s);
      const std::string down = "plane" + std::to_string(s) + ".nvswitch0";
      for (const std::string& from : {up, down}) {
        ASSERT_TRUE(taken.count(from)) << from;
        const auto& ports = taken.at(from);
        EXPECT_EQ(static_cast<int>(ports.size()), uplinks[s]) << "GPU " << gpu << " " << from;
        int least = 1 << 30, most = 0;
        for (const auto& [port, n] : ports) {
          least = std::min(least, n);
          most = std::max(most, n);
        }
        EXPECT_LE(most - least, 1) << "GPU " << gpu << " " << from;
      }
    }
  }
}

TEST(Routes, ThreeTierChunksReachEveryCoreOfTheirAggregationSwitch) {
  // Radix 8 at 1:1: pods of 4 leaves with 4 aggregation switches; 4 pods, so every
  // aggregation switch spreads its 4 uplinks over a group of 2 cores. A transfer between pods
  // crosses leaf -> aggregation (1 of 4) -> core (1 of 2): the chunks through each aggregation
  // switch take both its cores, evenly (with one hash for both stages, only core a mod 2).
  const PlatformConfig c = single_gpu_nodes(64, Topology::FatTree, 8, 1.0, 3);
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const auto taken = ports_taken(g, routing, 0, 63, 64);
  int aggregation_switches = 0;
  for (const auto& [from, ports] : taken) {
    if (from.rfind("pod0.agg", 0) != 0) continue;
    ++aggregation_switches;
    ASSERT_EQ(ports.size(), 2u) << from;
    EXPECT_EQ(ports.begin()->second, ports.rbegin()->second) << from;
  }
  EXPECT_EQ(aggregation_switches, 4);
}

// Flow fidelity's path (RoutedPaths): a transfer between pods of the three-tier tree above
// crosses every network link its chunks take in packet fidelity, with the share of the chunks
// that take it (512 chunks: whole rounds of every list), and its links in the nodes whole.
TEST(Routes, AFlowSpreadsOverTheNetworkAsItsChunksDo) {
  const PlatformConfig c = single_gpu_nodes(64, Topology::FatTree, 8, 1.0, 3);
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const RoutedPaths paths(g, routing, sc_core::SC_ZERO_TIME);
  const uint32_t chunks = 512;
  // The network's switches and the source's gateway (node 63's gateway shares its name with
  // its device in the node, whose hop into the node is not the network's).
  std::set<std::string> network_devices{g.network.graph.devices[0].name};
  for (uint32_t x = g.network.gateways; x < g.network.graph.devices.size(); ++x)
    network_devices.insert(g.network.graph.devices[x].name);
  std::map<std::string, double> expected;
  for (const auto& [from, ports] : ports_taken(g, routing, 0, 63, chunks))
    if (network_devices.count(from))
      for (const auto& [port, n] : ports) expected[from + ".up" + std::to_string(port)] = double(n) / chunks;
  protocol::FabricTransfer t;
  t.source = 0;
  t.destination = 63;
  std::vector<uint32_t> links;
  std::vector<double> shares;
  paths.path(t, links, shares);
  ASSERT_EQ(links.size(), shares.size());
  size_t network = 0;
  double total = 0.0;
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string name = paths.name(links[i]);
    if (!expected.count(name)) {
      EXPECT_EQ(shares[i], 1.0) << name;
      continue;
    }
    ++network;
    total += shares[i];
    EXPECT_NEAR(shares[i], expected.at(name), 1e-12) << name;
  }
  EXPECT_EQ(network, expected.size());
  EXPECT_GT(network, 20u);  // 4 uplinks at the leaf, 8 at the aggregation switches, ...
  EXPECT_NEAR(total, 6.0, 1e-9);  // leaf, aggregation, core, aggregation, leaf: and the NIC's uplink
}

// Past what the kept legs may hold, a leg is spread again for each transfer and listed with the
// path: the same links and shares as a kept one.
TEST(Routes, LegsPastTheStoreLimitAreSpreadAgainAlike) {
  const PlatformConfig c = single_gpu_nodes(64, Topology::FatTree, 8, 1.0, 3);
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const RoutedPaths kept(g, routing, sc_core::SC_ZERO_TIME);
  const RoutedPaths limited(g, routing, sc_core::SC_ZERO_TIME, 300);
  auto listed = [](const RoutedPaths& paths, const protocol::FabricTransfer& t, bool& named) {
    std::vector<uint32_t> links;
    std::vector<double> shares;
    const uint32_t leg = paths.path_with_leg(t, links, shares);
    std::map<uint32_t, double> out;
    for (size_t i = 0; i < links.size(); ++i) out[links[i]] += models::PathProvider::share(shares, i);
    named = leg != models::PathProvider::kNoLeg;
    if (named) paths.leg(leg).each([&](uint32_t l, double share) { out[l] += share; });
    return out;
  };
  size_t named = 0, spread_again = 0;
  for (uint32_t s = 0; s < 64; s += 3)
    for (uint32_t d = 0; d < 64; ++d) {
      if (s == d) continue;
      protocol::FabricTransfer t;
      t.source = s;
      t.destination = d;
      bool a = false, b = false;
      const std::map<uint32_t, double> whole = listed(kept, t, a), again = listed(limited, t, b);
      ASSERT_EQ(whole.size(), again.size()) << s << " -> " << d;
      for (const auto& [l, share] : whole) EXPECT_DOUBLE_EQ(again.at(l), share) << s << " -> " << d;
      EXPECT_TRUE(a);
      (b ? named : spread_again) += 1;
    }
  EXPECT_GT(named, 0u);
  EXPECT_GT(spread_again, 100u);
}

// RoutedPaths keeps one leg for every gateway on a switch to every gateway of a routing key
// (the links between switches; the gateways' links whole): every pair of gateways of a
// three-tier tree and of a rail-optimized network still gets its own spread, link by link.
TEST(Routes, EveryPairOfGatewaysGetsItsOwnSpread) {
  PlatformConfig rails = load_platform("dgx-a100");
  rails.nodes = 12;
  rails.network.radix = 8;
  rails.validate();
  for (const PlatformConfig& c : {single_gpu_nodes(64, Topology::FatTree, 8, 1.0, 3), rails}) {
    const PlatformGraph g = generate_topology(c);
    const Routing routing(g);
    const RoutedPaths paths(g, routing, sc_core::SC_ZERO_TIME);
    const Graph& net = g.network.graph;
    const uint32_t first = paths.node_link_id(g.nodes, 0);  // the network's links follow the nodes'
    std::vector<Routing::Share> spread;
    Routing::SpreadScratch scratch;
    std::vector<uint32_t> links;
    std::vector<double> shares;
    size_t pairs = 0;
    for (uint32_t s = 0; s < g.gpu_count(); ++s)
      for (uint32_t d = 0; d < g.gpu_count(); ++d) {
        if (s / c.node.gpus == d / c.node.gpus) continue;
        protocol::FabricTransfer t;
        t.source = s;
        t.destination = d;
        paths.path(t, links, shares);
        std::map<uint32_t, double> listed;
        for (size_t i = 0; i < links.size(); ++i)
          if (links[i] >= first) listed[links[i] - first] += models::PathProvider::share(shares, i);
        // The gateways the path left and entered by: its first and last network links.
        uint32_t from = ~0u, to = ~0u;
        for (size_t i = 0; i < links.size(); ++i) {
          if (links[i] < first) continue;
          const GraphLink& l = net.links[(links[i] - first) / 2];
          const uint32_t a = (links[i] - first) % 2 ? l.b : l.a, b = (links[i] - first) % 2 ? l.a : l.b;
          if (a < g.network.gateways && from == ~0u) from = a;
          if (b < g.network.gateways) to = b;
        }
        ASSERT_NE(from, ~0u);
        ASSERT_NE(to, ~0u);
        routing.network_spread(from, to, spread, scratch);
        std::map<uint32_t, double> expected;
        for (const Routing::Share& x : spread) expected[net.directed_link(x.device, x.port)] += x.share;
        ASSERT_EQ(listed.size(), expected.size()) << s << " -> " << d;
        for (const auto& [l, share] : expected) EXPECT_DOUBLE_EQ(listed[l], share) << s << " -> " << d;
        ++pairs;
      }
    EXPECT_GT(pairs, 1000u);
  }
}

// Toward most keys a switch takes the same list (its uplinks): the columns toward every key of
// a three-tier tree hold a fraction of keys x switches (what they route: the tests above).
TEST(Routes, TheColumnsTowardEveryKeyShareTheirBlocks) {
  const PlatformConfig c = single_gpu_nodes(4096, Topology::FatTree, 32, 1.0, 3);
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  const uint32_t gws = g.network.gateways, switches = g.network.switches();
  std::vector<uint32_t> gateway_of(routing.keys(), ~0u);
  for (uint32_t gw = 0; gw < gws; ++gw) gateway_of[routing.destination_key(gw)] = gw;
  std::vector<Routing::Share> spread;
  Routing::SpreadScratch scratch;
  for (uint32_t k = 0; k < routing.keys(); ++k) {  // a spread toward each key builds its column
    const uint32_t from = gateway_of[(k + routing.keys() / 2) % routing.keys()];
    routing.network_spread(from, gateway_of[k], spread, scratch);
    EXPECT_GE(spread.size(), 2u);
  }
  EXPECT_GT(routing.keys(), 100u);
  EXPECT_LT(routing.column_entries(), size_t(routing.keys()) * switches / 3);  // 23% here
}

TEST(Routes, ASwitchIslandIsUnroutableAndNamesTheLinks) {
  // What the loader rejects (tests/platforms/bad/disconnected_links.yaml) the router rejects
  // too, for a configuration built past the loader: two leaves that nothing joins.
  PlatformConfig c = load_platform(std::string(TESSERA_BAD_PLATFORMS) + "/../good/two-leaf-links.yaml");
  c.network.switches = {"leaf0", "leaf1"};
  c.network.links.resize(4);  // drop the spine links
  const PlatformGraph g = generate_topology(c);
  try {
    Routing routing(g);
    FAIL() << "an island routed";
  } catch (const PlatformError& e) {
    EXPECT_EQ(e.key(), "network.links");
    EXPECT_NE(std::string(e.what()).find("not connected"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.validate(), PlatformError);
}

// --- What changes the results and what does not (graph level) -------------------------------

double route_bottleneck(const PlatformConfig& c, uint32_t s, uint32_t d) {
  const PlatformGraph g = generate_topology(c);
  const Routing routing(g);
  double b = 0;
  for (const Hop& h : route(g, routing, s, d)) b = b == 0 ? h.bandwidth_bytes_per_s : std::min(b, h.bandwidth_bytes_per_s);
  return b;
}

TEST(Sensitivity, TorusFollowsItsLinksAndShapeNotNvlink) {
  const PlatformConfig base = load_platform("torus-3d");
  const double b0 = bisection(base);
  EXPECT_NEAR(bisection(load_platform("torus-3d", {"network.link.bandwidth_gb_per_s=100"})), 2 * b0, 1.0);
  EXPECT_NEAR(bisection(load_platform("torus-3d", {"node.nvlink.link.bandwidth_gb_per_s=50"})), b0, 1.0);
  // The network link follows the NIC rate unless set apart (docs/platforms.md): set apart, a
  // faster NIC leaves the torus alone.
  EXPECT_NEAR(bisection(load_platform("torus-3d", {"node.nics.line_rate_gbit_per_s=800",
                                                   "network.link.bandwidth_gb_per_s=50"})),
              b0, 1.0);
  // Reshaping 4x4x4 into 2x4x8 halves the cross-section cut by the halves.
  EXPECT_NEAR(bisection(load_platform("torus-3d", {"network.torus_dims=[2,4,8]"})), b0 / 2, 1.0);
  // GPU 0 to a GPU of another node: the bottleneck is the NIC or the torus link, whichever is
  // slower; the NVLink rate does not enter.
  const uint32_t far = 8 * 21;  // node (1,1,1)
  EXPECT_NEAR(route_bottleneck(base, 0, far), 50e9, 1.0);
  EXPECT_NEAR(route_bottleneck(load_platform("torus-3d", {"network.link.bandwidth_gb_per_s=25"}), 0, far), 25e9, 1.0);
  EXPECT_NEAR(route_bottleneck(load_platform("torus-3d", {"node.nvlink.link.bandwidth_gb_per_s=50"}), 0, far), 50e9, 1.0);
}

TEST(Sensitivity, NvlinkNetworkFollowsNvlinkAndOversubscriptionNotNics) {
  const PlatformConfig base = load_platform("nvl-256");
  const double b0 = bisection(base);
  EXPECT_NEAR(bisection(load_platform("nvl-256", {"network.oversubscription=1"})), 2 * b0, 1.0);
  EXPECT_NEAR(bisection(load_platform("nvl-256", {"network.link.bandwidth_gb_per_s=50"})), 2 * b0, 1.0);
  // The GPU-side NVLinks are not the narrow part at 2:1.
  EXPECT_NEAR(bisection(load_platform("nvl-256", {"node.nvlink.link.bandwidth_gb_per_s=50"})), b0, 1.0);
  EXPECT_NEAR(bisection(load_platform("nvl-256", {"node.nics.line_rate_gbit_per_s=800"})), b0, 1.0);
  EXPECT_NEAR(bisection(load_platform("nvl-256", {"node.pcie.link.bandwidth_gb_per_s=126"})), b0, 1.0);
}

TEST(Sensitivity, RailOptimizedBisectionFollowsNicsUpToPcieNotNvlink) {
  // 16 DGX H100 in two groups of rail leaves: the first group's 8 x 8 NICs cross, each at the
  // slower of its line rate and (two GPUs and two NICs on a PCIe switch) a GPU's PCIe port.
  const std::vector<std::string> base = {"nodes=16", "network.radix=16"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return load_platform("dgx-h100", extra);
  };
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{}, {"node.nics.line_rate_gbit_per_s=800"},
                                             {"node.nics.line_rate_gbit_per_s=200"},
                                             {"node.nvlink.link.bandwidth_gb_per_s=50"}}) {
    const PlatformConfig c = with(extra);
    const double per_nic = std::min(nic_bandwidth(c), c.node.pcie.link.bandwidth_gb_per_s * 1e9);
    SCOPED_TRACE(::testing::PrintToString(extra));
    EXPECT_NEAR(bisection(c), 8.0 * c.node.nics.count * per_nic, 1.0);
  }
}

}  // namespace
}  // namespace tessera::platforms
