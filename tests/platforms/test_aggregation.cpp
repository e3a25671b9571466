// In-network reduction trees (SHARP) built from generated topologies: which switches a tree
// crosses, what each waits for and where its partial sum goes; every GPU's own NIC. Graph level
// only, no SystemC kernel.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "platforms/aggregation.h"
#include "platforms/platform_file.h"
#include "tests/support/platform_configs.h"

namespace tessera::platforms {
namespace {

struct Built {
  PlatformGraph graph;
  Routing routing;
  explicit Built(const PlatformConfig& c) : graph(generate_topology(c)), routing(graph) {}
  const std::string& name(uint32_t device) const { return graph.network.graph.devices[device].name; }
};

TEST(HomeGateway, EveryGpuOfADgxHasItsOwnNic) {
  // Two GPUs and two NICs per PCIe switch: GPU 2i takes NIC 2i, GPU 2i+1 takes NIC 2i+1.
  const Built b(load_platform("dgx-h100", {"nodes=2"}));
  for (uint32_t gpu = 0; gpu < 8; ++gpu) EXPECT_EQ(b.routing.home_gateway(gpu), int32_t(gpu)) << gpu;
}

TEST(HomeGateway, GpusShareTheOnlyNic) {
  PlatformConfig c = testing::single_gpu_nodes(4, Topology::FatTree, 8, 1.0, 2);
  c.node.gpus = 2;
  c.validate();
  const Built b(c);
  EXPECT_EQ(b.routing.home_gateway(0), 0);
  EXPECT_EQ(b.routing.home_gateway(1), 0);
}

// Rail images (sc_main/rail_images.h): a DGX's GPU i leaves by its own NIC i (its share of the
// two on its PCIe switch), so GPU i leaves as GPU 0 does i NICs on; never with a shift that
// lands on another NIC, nor backwards.
TEST(LeavesAs, ADgxsGpusLeaveAsGpu0ByTheirOwnNic) {
  const Built b(load_platform("dgx-h100", {"nodes=2"}));
  EXPECT_TRUE(b.routing.leaves_as(0, 2, 2));
  EXPECT_TRUE(b.routing.leaves_as(1, 3, 2));
  EXPECT_TRUE(b.routing.leaves_as(0, 6, 6));
  EXPECT_TRUE(b.routing.leaves_as(0, 1, 1));
  EXPECT_TRUE(b.routing.leaves_as(0, 3, 3));
  EXPECT_FALSE(b.routing.leaves_as(0, 2, 1));
  EXPECT_FALSE(b.routing.leaves_as(2, 0, 2));
  EXPECT_FALSE(b.routing.leaves_as(0, 0, 0));
}

TEST(AggregationTree, OneRailLeafReducesTheWholeRail) {
  // Four DGX H100 on rail leaves of 32 nodes: GPU 3 of every node reaches rail 3's leaf, which
  // is the whole tree: it waits for four contributions and sends the sum back to each.
  const Built b(load_platform("dgx-h100", {"nodes=4"}));
  const protocol::AggregationTree t = aggregation_tree(b.graph, b.routing, {3, 11, 19, 27});
  ASSERT_EQ(t.vertices.size(), 1u);
  const auto& root = t.vertices[0];
  EXPECT_EQ(b.name(root.device), "rail3.leaf0");
  EXPECT_EQ(root.parent_port, -1);
  EXPECT_EQ(root.contributions, 4u);
  ASSERT_EQ(root.children, 4u);
  std::set<int> ranks;
  for (uint32_t c = 0; c < root.children; ++c) ranks.insert(t.down[root.first_child + c].rank);
  EXPECT_EQ(ranks, (std::set<int>{3, 11, 19, 27}));
}

TEST(AggregationTree, LeavesSendOnePartialSumToTheSpine) {
  // Radix 4 at 1:1: leaves of two nodes, two uplinks each, two spines. Four one-GPU nodes: two
  // leaves of two members each, which add up their two and pass one partial sum to the root
  // spine; the spine adds the two partials.
  const Built b(testing::single_gpu_nodes(4, Topology::FatTree, 4, 1.0, 2));
  const protocol::AggregationTree t = aggregation_tree(b.graph, b.routing, {0, 1, 2, 3}, 7);
  EXPECT_EQ(t.id, 7u);
  ASSERT_EQ(t.vertices.size(), 3u);
  int roots = 0;
  for (const auto& v : t.vertices) {
    EXPECT_EQ(v.contributions, 2u) << b.name(v.device);
    EXPECT_EQ(v.children, 2u) << b.name(v.device);
    if (v.parent_port < 0) {
      ++roots;
      EXPECT_EQ(b.name(v.device).find("spine"), 0u) << b.name(v.device);
      for (uint32_t c = 0; c < v.children; ++c) EXPECT_EQ(t.down[v.first_child + c].rank, -1);
    } else {
      const uint32_t parent = b.graph.network.graph.neighbor(v.device, uint32_t(v.parent_port));
      EXPECT_NE(t.at(parent), nullptr);
      EXPECT_LT(t.at(parent)->parent_port, 0);
      for (uint32_t c = 0; c < v.children; ++c) EXPECT_GE(t.down[v.first_child + c].rank, 0);
    }
  }
  EXPECT_EQ(roots, 1);
  EXPECT_EQ(t.at(0), nullptr);  // a gateway, not a switch of the tree
}

TEST(AggregationTree, TreesAreKeptAndNumbered) {
  const Built b(load_platform("dgx-h100", {"nodes=2"}));
  AggregationTrees trees(b.graph, b.routing);
  const protocol::AggregationTree& a = trees.tree({0, 8});
  const protocol::AggregationTree& c = trees.tree({1, 9});
  EXPECT_EQ(&trees.tree({0, 8}), &a);
  EXPECT_NE(a.id, c.id);
}

}  // namespace
}  // namespace tessera::platforms
