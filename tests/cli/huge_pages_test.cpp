// Large simulated runs on 2 MiB pages (sc_main/huge_pages.h): when the executable runs a command
// again with glibc's allocator asking for them, and that the run again reports what the run on
// 4 KiB pages reports.
#include "sc_main/huge_pages.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tessera.h"

namespace tessera::app {
namespace {

TEST(HugePages, OnlyAKernelThatGivesThemOnRequestNeedsTheRunAgain) {
  EXPECT_TRUE(kernel_gives_huge_pages_on_request("always [madvise] never\n"));
  EXPECT_FALSE(kernel_gives_huge_pages_on_request("[always] madvise never\n"));  // every process has them
  EXPECT_FALSE(kernel_gives_huge_pages_on_request("always madvise [never]\n"));
  EXPECT_FALSE(kernel_gives_huge_pages_on_request(""));  // no such file: no transparent huge pages
}

TEST(HugePages, TheTunableCameWithGlibc235) {
  EXPECT_TRUE(glibc_has_huge_page_tunable("2.35"));
  EXPECT_TRUE(glibc_has_huge_page_tunable("2.36"));
  EXPECT_TRUE(glibc_has_huge_page_tunable("3.0"));
  EXPECT_FALSE(glibc_has_huge_page_tunable("2.34"));
  EXPECT_FALSE(glibc_has_huge_page_tunable("2.9"));
  EXPECT_FALSE(glibc_has_huge_page_tunable("unknown"));
}

TEST(HugePages, TheTunableJoinsThoseAlreadySet) {
  EXPECT_EQ(tunables_with_huge_pages(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(tunables_with_huge_pages("glibc.malloc.arena_max=2"), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
}

TEST(HugePages, NeverAskedOutsideTheExecutableNorForSmallRuns) {
  // This test process never offered (only tessera's main does): whatever the size.
  EXPECT_FALSE(rerun_with_huge_pages(1 << 20));
  offer_rerun_with_huge_pages();
  EXPECT_FALSE(rerun_with_huge_pages(kHugePagesFromGpus - 1));
}

// A flow run of 1,024 GPUs (GPT-3 1.3B, tp 8, dp 128: under a second), its report's JSON.
nlohmann::json run_report(const std::string& environment, const std::string& name) {
  const std::string report = cli_testing::temp_dir() + "/" + name + ".json";
  const cli_testing::Result r = cli_testing::tessera(
      "run -q --fidelity flow --platform dgx-h100 --nodes 128 --model gpt3-1.3b --tp 8 --dp 128 "
      "--global-batch 128 --micro-batch 1 --report " + report, environment);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  return nlohmann::json::parse(cli_testing::read_file(report));
}

TEST(HugePages, ALargeRunRunsAgainOnThemAndReportsTheSame) {
  const nlohmann::json off = run_report("TESSERA_HUGE_PAGES=off", "off");
  EXPECT_FALSE(off["simulation"].contains("huge_pages"));
  // Without GLIBC_TUNABLES: the executable decides (a user's own setting is kept and added to).
  nlohmann::json on = run_report("GLIBC_TUNABLES=", "on");
  const bool offered_here = huge_pages_on_request();  // (a sanitized build's executable is too)
  if (offered_here) {
    ASSERT_TRUE(on["simulation"].contains("huge_pages")) << "the run was not run again on huge pages";
    EXPECT_TRUE(on["simulation"]["huge_pages"].get<bool>());
  }
  on["simulation"].erase("huge_pages");
  EXPECT_EQ(on.dump(), off.dump());  // the same simulation, whichever pages held it
  if (!offered_here) GTEST_SKIP() << "this kernel does not give huge pages on request: nothing ran again";
}

}  // namespace
}  // namespace tessera::app
