// Platform and GPU type files: every shipped file loads and validates; overrides; every kind of
// bad input gets one line naming its file, line and key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "platforms/platform_config.h"
#include "platforms/platform_file.h"

namespace tessera::platforms {
namespace {

const std::string kBad = TESSERA_BAD_PLATFORMS;
const std::string kGood = std::string(TESSERA_BAD_PLATFORMS) + "/../good";

TEST(ShippedPlatforms, EveryOneLoadsAndValidates) {
  const std::vector<PlatformInfo> shipped = list_platforms();
  std::vector<std::string> names;
  for (const PlatformInfo& p : shipped) {
    names.push_back(p.name);
    EXPECT_FALSE(p.description.empty()) << p.name;
    SCOPED_TRACE(p.name);
    const PlatformConfig c = load_platform(p.name);
    EXPECT_EQ(c.name, p.name);
    EXPECT_EQ(c.source, p.path);
    EXPECT_NO_THROW(c.validate());
  }
  for (const char* expected :
       {"dgx-a100", "dgx-h100", "hgx-h200", "pcie-8gpu", "torus-3d", "nvl-256"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(ShippedPlatforms, DgxH100) {
  const PlatformConfig c = load_platform("dgx-h100");
  EXPECT_EQ(c.gpu.name, "H100-SXM5-80GB");
  EXPECT_EQ(c.gpu_count(), 8);
  EXPECT_EQ(c.node.nvlink.switches, 4);
  const int expected[] = {5, 4, 4, 5};
  for (int s = 0; s < 4; ++s) EXPECT_EQ(c.nvlinks_to_switch(s), expected[s]);
  EXPECT_TRUE(c.node.nvlink.in_switch_reduction);
  EXPECT_DOUBLE_EQ(c.node.nvlink.link.bandwidth_gb_per_s, 25.0);
  EXPECT_DOUBLE_EQ(c.node.nvlink.link.latency_ns, 150.0);
  EXPECT_EQ(c.node.nvlink.link.packet_overhead_bytes, 32u);
  EXPECT_EQ(c.node.nvlink.link.max_packet_bytes, 128u);
  EXPECT_DOUBLE_EQ(c.node.nvlink.switch_latency_ns, 100.0);
  EXPECT_EQ(c.node.nics.count, 8);
  EXPECT_DOUBLE_EQ(c.node.nics.line_rate_gbit_per_s, 400.0);
  EXPECT_EQ(c.network.topology, Topology::RailOptimized);
  EXPECT_EQ(c.gpu_buffer_bytes, 1u << 20);
  EXPECT_EQ(c.switch_buffer_bytes, 1u << 20);
}

TEST(ShippedPlatforms, DgxA100) {
  const PlatformConfig c = load_platform("dgx-a100");
  EXPECT_EQ(c.gpu.name, "A100-SXM4-80GB");
  EXPECT_EQ(c.node.nvlink.switches, 6);
  for (int s = 0; s < 6; ++s) EXPECT_EQ(c.nvlinks_to_switch(s), 2);
  EXPECT_EQ(c.node.pcie.switches, 4);
  EXPECT_DOUBLE_EQ(c.network.link.bandwidth_gb_per_s, 25.0);  // 200 Gb/s HDR
}

TEST(ShippedPlatforms, DerivedValuesFollowTheirSource) {
  // hgx-h200 leaves the NVLink and network bandwidths to the GPU type and the NIC.
  const PlatformConfig c = load_platform("hgx-h200");
  EXPECT_DOUBLE_EQ(c.node.nvlink.link.bandwidth_gb_per_s, 25.0);
  EXPECT_DOUBLE_EQ(c.network.link.bandwidth_gb_per_s, 50.0);
  EXPECT_EQ(c.network.link.max_packet_bytes, 4096u);
  EXPECT_EQ(c.network.link.packet_overhead_bytes, 66u);
  EXPECT_DOUBLE_EQ(c.gpu.hbm_capacity_gib, 141.0);
}

TEST(ShippedPlatforms, PcieServerWritesItsGpuInlineFromABase) {
  const PlatformConfig c = load_platform("pcie-8gpu");
  EXPECT_EQ(c.node.nvlink.switches, 0);
  EXPECT_EQ(c.node.pcie.switches, 2);
  EXPECT_EQ(c.gpu.name, "H100-PCIe-80GB");
  EXPECT_EQ(c.gpu.sm_count, 114);
  EXPECT_DOUBLE_EQ(c.gpu.peak_tflops[3], 756.0);
  EXPECT_DOUBLE_EQ(c.gpu.compute_efficiency, 0.80);  // from the base
  EXPECT_DOUBLE_EQ(c.gpu.hbm_capacity_gib, 80.0);    // from the base
}

TEST(ShippedPlatforms, MultiNodeTopologies) {
  const PlatformConfig torus = load_platform("torus-3d");
  EXPECT_EQ(torus.nodes, 64);
  EXPECT_EQ(torus.network.topology, Topology::Torus);
  EXPECT_EQ(torus.network.torus_dims, (std::vector<int>{4, 4, 4}));
  const PlatformConfig nvl = load_platform("nvl-256");
  EXPECT_EQ(nvl.gpu_count(), 256);
  EXPECT_EQ(nvl.network.topology, Topology::NvlinkNetwork);
  EXPECT_DOUBLE_EQ(nvl.network.oversubscription, 2.0);
}

TEST(ShippedPlatforms, LoadsByPathToo) {
  const PlatformConfig c = load_platform(platform_directory() + "/dgx-a100.yaml");
  EXPECT_EQ(c.name, "dgx-a100");
}

TEST(ShippedPlatforms, EnvironmentNamesAnotherFolder) {
  // $TESSERA_PLATFORMS: its platforms are the shipped ones; GPU types still resolve from the
  // source tree when the folder has no gpus/.
  const std::string dir = ::testing::TempDir() + "/tessera-platforms-env";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/lab.yaml") << "description: the lab's box\ngpu: A100-SXM4-80GB\n";
  setenv("TESSERA_PLATFORMS", dir.c_str(), 1);
  const std::vector<PlatformInfo> listed = list_platforms();
  const PlatformConfig c = load_platform("lab");
  unsetenv("TESSERA_PLATFORMS");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "lab");
  EXPECT_EQ(listed[0].description, "the lab's box");
  EXPECT_EQ(c.gpu.name, "A100-SXM4-80GB");
}

TEST(GpuTypes, EveryOneLoads) {
  const std::vector<std::string> gpus = list_gpus();
  for (const char* expected : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200"})
    EXPECT_NE(std::find(gpus.begin(), gpus.end(), expected), gpus.end()) << expected;
  for (const std::string& name : gpus) {
    const models::GpuSpec g = load_gpu(name);
    EXPECT_EQ(g.name, name);
    // Each type validates in a platform without NVLink (whose port counts would not matter).
    PlatformConfig c = load_platform("pcie-8gpu", {"gpu=" + name});
    EXPECT_EQ(c.gpu.name, name);
  }
}

TEST(GpuTypes, H100FileMatchesTheBuiltInDefault) {
  const models::GpuSpec file = load_gpu("H100-SXM5-80GB");
  const models::GpuSpec built_in;
  EXPECT_EQ(file.peak_tflops, built_in.peak_tflops);
  EXPECT_DOUBLE_EQ(file.compute_efficiency, built_in.compute_efficiency);
  EXPECT_DOUBLE_EQ(file.hbm_capacity_gib, built_in.hbm_capacity_gib);
  EXPECT_DOUBLE_EQ(file.hbm_bandwidth_gbps, built_in.hbm_bandwidth_gbps);
  EXPECT_DOUBLE_EQ(file.hbm_efficiency, built_in.hbm_efficiency);
  EXPECT_DOUBLE_EQ(file.kernel_overhead_us, built_in.kernel_overhead_us);
  EXPECT_EQ(file.sm_count, built_in.sm_count);
  EXPECT_EQ(file.nvlink_ports, built_in.nvlink_ports);
  EXPECT_DOUBLE_EQ(file.nvlink_port_bandwidth_gbps, built_in.nvlink_port_bandwidth_gbps);
}

TEST(GpuTypes, A100EfficienciesComeFromTheMeasuredTable) {
  const models::GpuSpec a100 = load_gpu("A100-SXM4-80GB");
  EXPECT_NEAR(a100.compute_efficiency, 271.2 / 312.0, 1e-4);  // gemm_and_memory.csv
  EXPECT_NEAR(a100.hbm_efficiency, 1700.0 / 2039.0, 1e-4);
  EXPECT_EQ(a100.nvlink_ports, 12);
  const models::GpuSpec b200 = load_gpu("B200");
  EXPECT_DOUBLE_EQ(b200.nvlink_port_bandwidth_gbps, 50.0);
}

TEST(GpuTypes, UnknownNameIsOneLine) {
  try {
    load_gpu("H100");
    FAIL();
  } catch (const PlatformFileError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown GPU type 'H100'"), std::string::npos) << e.what();
  }
}

TEST(LinkSpec, TimingBondsLanes) {
  const LinkSpec nvlink{25.0, 150.0, 16, 256};
  const protocol::LinkTiming t = nvlink.timing(5);
  EXPECT_DOUBLE_EQ(t.bandwidth_bytes_per_s, 125e9);
  EXPECT_EQ(t.latency, sc_core::sc_time(150, sc_core::SC_NS));
  EXPECT_EQ(t.packet_overhead_bytes, 16u);
  EXPECT_EQ(t.max_packet_payload_bytes, 256u);
  EXPECT_DOUBLE_EQ(nvlink.timing().bandwidth_bytes_per_s, 25e9);
}

TEST(Topology, NamesAreTheFileSpellings) {
  EXPECT_EQ(topology_names(), (std::vector<std::string>{"none", "fat-tree", "rail-optimized",
                                                         "torus", "dragonfly", "nvlink-network",
                                                         "links"}));
  EXPECT_STREQ(topology_name(Topology::LinkList), "links");
}

TEST(Docs, EveryExamplePlatformInDocsLoads) {
  // docs/platforms.md: every ```yaml block with a top-level `gpu:` is a complete platform.
  std::ifstream doc(std::string(TESSERA_SOURCE_DIR) + "/docs/platforms.md");
  ASSERT_TRUE(doc.good());
  std::string line, block;
  bool in_yaml = false;
  int examples = 0;
  while (std::getline(doc, line)) {
    if (line == "```yaml") {
      in_yaml = true;
      block.clear();
    } else if (in_yaml && line == "```") {
      in_yaml = false;
      if (block.rfind("gpu:", 0) != 0 && block.find("\ngpu:") == std::string::npos) continue;
      const std::string path = ::testing::TempDir() + "/doc-example.yaml";
      std::ofstream(path) << block;
      SCOPED_TRACE(block.substr(0, block.find('\n')));
      EXPECT_NO_THROW(load_platform_file(path));
      ++examples;
    } else if (in_yaml) {
      block += line + "\n";
    }
  }
  EXPECT_EQ(examples, 5);
}

TEST(Docs, OneLinePlatformIsValid) {
  const std::string path = ::testing::TempDir() + "/one-line.yaml";
  std::ofstream(path) << "gpu: H100-SXM5-80GB\n";
  const PlatformConfig c = load_platform_file(path);
  EXPECT_EQ(c.gpu_count(), 8);
  EXPECT_EQ(c.node.nvlink.switches, 0);
  EXPECT_EQ(c.network.topology, Topology::None);
}

TEST(LinkList, ReadsLinksWithTheirLinesAndDefaults) {
  const PlatformConfig c = load_platform_file(kGood + "/two-leaf-links.yaml");
  ASSERT_EQ(c.network.links.size(), 6u);
  EXPECT_EQ(c.network.switches, (std::vector<std::string>{"leaf0", "leaf1", "spine0"}));
  EXPECT_EQ(c.network.links[0].from, "leaf0");
  EXPECT_EQ(c.network.links[0].to, "node0.nic0");
  EXPECT_EQ(c.network.links[0].line, 12);
  EXPECT_DOUBLE_EQ(c.network.links[0].bandwidth_gb_per_s, 50.0);  // network.link: 400 Gb/s NIC
  EXPECT_DOUBLE_EQ(c.network.links[0].latency_ns, 40.0);          // network.link
  EXPECT_DOUBLE_EQ(c.network.links[4].bandwidth_gb_per_s, 100.0);
  EXPECT_DOUBLE_EQ(c.network.links[5].latency_ns, 200.0);
}

// ---------------------------------------------------------------------------------------------
// Overrides.

TEST(Settings, OverrideValuesByDottedKey) {
  PlatformConfig c = load_platform("dgx-h100");
  apply_setting(c, "network.oversubscription", "2");
  apply_setting(c, "nodes=4");
  apply_setting(c, "node.nvlink.switches=2");
  apply_setting(c, "node.nvlink.links_per_switch", "[9, 9]");
  apply_setting(c, "node.nvlink.in-switch-reduction=false");  // '-' spells '_'
  EXPECT_DOUBLE_EQ(c.network.oversubscription, 2.0);
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.nvlinks_to_switch(1), 9);
  EXPECT_FALSE(c.node.nvlink.in_switch_reduction);
  EXPECT_NO_THROW(c.validate());
}

TEST(Settings, GpuTypeAndNicRateCarryTheirDerivedBandwidths) {
  PlatformConfig c = load_platform("dgx-h100");
  apply_setting(c, "gpu", "B200");
  EXPECT_EQ(c.gpu.name, "B200");
  EXPECT_DOUBLE_EQ(c.node.nvlink.link.bandwidth_gb_per_s, 50.0);
  apply_setting(c, "node.nics.line_rate_gbit_per_s=800");
  EXPECT_DOUBLE_EQ(c.network.link.bandwidth_gb_per_s, 100.0);
  apply_setting(c, "gpu.hbm_capacity_gib=192");
  EXPECT_DOUBLE_EQ(c.gpu.hbm_capacity_gib, 192.0);
  EXPECT_EQ(c.gpu.sm_count, 148);
  // Set apart, a derived value stays.
  apply_setting(c, "node.nvlink.link.bandwidth_gb_per_s=40");
  apply_setting(c, "gpu=H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(c.node.nvlink.link.bandwidth_gb_per_s, 40.0);
}

TEST(Settings, LoadPlatformAppliesThenValidates) {
  const PlatformConfig c = load_platform(
      "dgx-h100", {"nodes=4", "network.topology=torus", "network.torus_dims=[2, 2]"});
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.network.topology, Topology::Torus);
}

void expect_setting_error(const std::function<void()>& f, const std::string& line) {
  try {
    f();
    FAIL() << "no error; expected " << line;
  } catch (const PlatformFileError& e) {
    EXPECT_EQ(e.file(), "--set");
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()).substr(0, line.size()), line) << e.what();
  }
}

TEST(Settings, ErrorsNameTheOverride) {
  PlatformConfig c = load_platform("dgx-h100");
  expect_setting_error([&] { apply_setting(c, "network.oversubscriptoin", "2"); },
                       "--set network.oversubscriptoin: unknown key (did you mean "
                       "'oversubscription'?)");
  expect_setting_error([&] { apply_setting(c, "nodes", "many"); },
                       "--set nodes: expected an integer, got 'many'");
  expect_setting_error([&] { apply_setting(c, "nodes="); }, "--set nodes: has no value");
  expect_setting_error([&] { apply_setting(c, "nodes"); }, "--set: expected KEY=VALUE, got 'nodes'");
  expect_setting_error([&] { apply_setting(c, "network.topology=hypercube"); },
                       "--set network.topology: unknown topology 'hypercube'");
  expect_setting_error([&] { apply_setting(c, "gpu=H100-SXM"); },
                       "--set gpu: unknown GPU type 'H100-SXM' (did you mean 'H100-SXM5-80GB'?)");
  expect_setting_error([&] { load_platform("dgx-h100", {"network.oversubscription=0.5"}); },
                       "--set network.oversubscription: must be a number in [1, 1024], got 0.5");
  expect_setting_error([&] { load_platform("dgx-h100", {"node.pcie.switches=3"}); },
                       "--set node.pcie.switches: 3 PCIe switches do not divide");
}

TEST(Settings, ValidationErrorNotAboutAnOverrideNamesTheFileLine) {
  // nodes=10 no longer matches the 4x4x4 torus: the message points at torus_dims in the file.
  try {
    load_platform("torus-3d", {"nodes=10"});
    FAIL();
  } catch (const PlatformFileError& e) {
    EXPECT_EQ(e.file(), platform_directory() + "/torus-3d.yaml");
    EXPECT_EQ(e.key(), "network.torus_dims");
    EXPECT_GT(e.line(), 0);
    EXPECT_NE(e.message().find("nodes is 10"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Bad files: file, line, key and the gist of the message.

struct BadFile {
  const char* file;
  int line;
  const char* key;
  const char* message;  // a part of the message
};
void PrintTo(const BadFile& b, std::ostream* os) { *os << b.file; }

class BadPlatformFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadPlatformFile, IsOneLineNamingFileLineAndKey) {
  const BadFile& bad = GetParam();
  const std::string path = kBad + "/" + bad.file;
  try {
    load_platform_file(path);
    FAIL() << bad.file << " loaded";
  } catch (const PlatformFileError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), bad.line) << what;
    EXPECT_EQ(e.key(), bad.key) << what;
    EXPECT_NE(e.message().find(bad.message), std::string::npos) << what;
    std::string prefix = path + ":" + std::to_string(bad.line) + ": ";
    if (*bad.key) prefix += std::string(bad.key) + ": ";
    EXPECT_EQ(what.substr(0, prefix.size()), prefix) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadPlatformFile,
    ::testing::Values(
        BadFile{"unknown_key.yaml", 8, "network.oversubscriptoin",
                "unknown key (did you mean 'oversubscription'?)"},
        BadFile{"wrong_type.yaml", 2, "nodes", "expected an integer, got 'four'"},
        BadFile{"negative_bandwidth.yaml", 8, "node.nvlink.link.bandwidth_gb_per_s",
                "must be a number in [0.001, 1000000], got -25"},
        BadFile{"missing_gpu.yaml", 3, "gpu", "missing: a platform names its GPU type"},
        BadFile{"unknown_gpu.yaml", 2, "gpu",
                "unknown GPU type 'H100-SXM5' (did you mean 'H100-SXM5-80GB'?)"},
        BadFile{"ports_mismatch.yaml", 6, "node.nvlink.links_per_switch",
                "add up to 5+4+4+4 = 17, but H100-SXM5-80GB has 18 NVLink ports"},
        BadFile{"link_to_missing_node.yaml", 11, "network.links[1].to",
                "link to 'node4.nic0': there is no node 4"},
        BadFile{"link_to_missing_switch.yaml", 14, "network.links[2].to",
                "link to 'spine0', which is neither a switch"},
        BadFile{"disconnected_links.yaml", 9, "network.links",
                "the links leave node2 unreachable from node0"},
        BadFile{"unknown_topology.yaml", 6, "network.topology", "unknown topology 'hypercube'"},
        BadFile{"torus_dims_mismatch.yaml", 8, "network.torus_dims",
                "a 4x4 torus has 16 switches, one per node, but nodes is 8"},
        BadFile{"yaml_syntax.yaml", 6, "", "YAML syntax error"},
        BadFile{"duplicate_key.yaml", 5, "nodes", "duplicate key (first given at line 2)"},
        BadFile{"zero_nodes.yaml", 2, "nodes", "must be an integer in [1, 65536], got 0"},
        BadFile{"pcie_not_dividing.yaml", 6, "node.pcie.switches",
                "3 PCIe switches do not divide the node's 8 GPUs evenly"},
        BadFile{"oversubscription_below_one.yaml", 9, "network.oversubscription",
                "must be a number in [1, 1024]"},
        BadFile{"tiers_four.yaml", 7, "network.tiers", "must be 2, 3 or 0 (the fewest that fit), got 4"},
        BadFile{"network_without_nics.yaml", 6, "node.nics.count",
                "topology fat-tree connects the nodes' NICs, but the node has none"},
        BadFile{"negative_latency.yaml", 7, "network.switch_latency_ns",
                "must be a number in [0, 1000000000], got -130"},
        BadFile{"gpu_inline_incomplete.yaml", 2, "gpu.sm_count", "missing"},
        BadFile{"gpu_efficiency_above_one.yaml", 3, "gpu.compute_efficiency",
                "must be a fraction in (0, 1], got 1.2"},
        BadFile{"dragonfly_mismatch.yaml", 8, "network.dragonfly_groups",
                "16 routers must divide nodes (24)"},
        BadFile{"link_unknown_key.yaml", 11, "network.links[0].bandwith_gb_per_s",
                "unknown key (did you mean 'bandwidth_gb_per_s'?)"},
        BadFile{"uneven_nvlink_split.yaml", 5, "node.nvlink.switches",
                "4 switches do not split the GPU's 18 NVLink ports evenly"}),
    [](const ::testing::TestParamInfo<BadFile>& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      return name;
    });

TEST(BadInput, UnreadableFile) {
  try {
    load_platform_file(kBad + "/no_such_file.yaml");
    FAIL();
  } catch (const PlatformFileError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()),
              kBad + "/no_such_file.yaml: cannot read (no such file)");
  }
}

TEST(BadInput, UnknownShippedPlatformSuggestsTheClosest) {
  try {
    load_platform("dgx-h10");
    FAIL();
  } catch (const PlatformFileError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'dgx-h100'?"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera::platforms
