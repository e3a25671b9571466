// tessera search against a brute-force flow sweep of the same space: the same best strategy,
// the same candidates invalid and out of memory (pruning agrees with tessera run), and the best
// never pruned.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "run_tessera.h"

using cli_testing::read_file;
using cli_testing::tessera;
using cli_testing::temp_dir;
using cli_testing::write_file;
using nlohmann::json;

namespace {

// GPT-3 1.3B on two DGX A100 whose GPUs hold 12 GiB, so that some strategies do not fit.
const char* kPlatform = "--platform dgx-a100 --nodes 2 --set gpu.hbm_capacity_gib=12";

std::string key(const json& p) {
  return p["tp"].get<std::string>() + "/" + p["pp"].get<std::string>() + "/" + p["micro-batch"].get<std::string>() +
         "/" + p["zero"].get<std::string>() + "/" + p["recompute"].get<std::string>();
}

TEST(Search, FindsTheBestOfABruteForceFlowSweepAndPrunesWhatRunRefuses) {
  const std::string dir = temp_dir();
  const auto search = tessera(std::string("search --model gpt3-1.3b ") + kPlatform +
                              " --global-batch 32 --tp 1,2,3,4 --pp 1,2 --cp 1 --micro-batch 1,4 --zero 0,1"
                              " --recompute none,full --schedule 1f1b --sequence-parallel false --top 4 -j 2"
                              " --report " + dir + "/search.json --csv " + dir + "/search.csv");
  ASSERT_EQ(search.status, 0) << search.err;
  EXPECT_NE(search.out.find("64 candidates"), std::string::npos) << search.out;
  EXPECT_NE(search.out.find("spread: the best"), std::string::npos) << search.out;
  EXPECT_NE(search.out.find(" runs in analytic fidelity "), std::string::npos) << search.out;  // the time of each phase
  const json s = json::parse(read_file(dir + "/search.json"));

  const std::string sweep = write_file("brute.yaml",
      "base: {model: gpt3-1.3b, platform: dgx-a100, nodes: 2, set.gpu.hbm_capacity_gib: 12, global-batch: 32,\n"
      "       cp: 1, schedule: 1f1b, sequence-parallel: false, fidelity: flow}\n"
      "grid:\n  tp: [1, 2, 3, 4]\n  pp: [1, 2]\n  micro-batch: [1, 4]\n  zero: [0, 1]\n  recompute: [none, full]\n");
  const auto brute = tessera("sweep " + sweep + " -j 2 --out " + dir + "/brute");
  ASSERT_EQ(brute.status, 0) << brute.err;
  const json b = json::parse(read_file(dir + "/brute.json"));

  std::map<std::string, double> ok;
  std::set<std::string> oom;
  int invalid = 0;
  for (const json& row : b["rows"]) {
    const std::string status = row["status"];
    if (status == "ok") ok[key(row["parameters"])] = row["iteration_time_s"];
    if (status == "oom") oom.insert(key(row["parameters"]));
    invalid += status == "invalid";
  }
  ASSERT_FALSE(ok.empty());
  ASSERT_FALSE(oom.empty()) << "the space should hold strategies that do not fit in 12 GiB";
  // Pruning agrees with run: the same invalid count, and exactly the runs that exit 4 pruned.
  EXPECT_EQ(s["candidates"]["invalid"], invalid);
  std::set<std::string> pruned;
  for (const json& c : s["out_of_memory"]) pruned.insert(key(c));
  EXPECT_EQ(pruned, oom);
  // Dominated candidates (full recompute where the twin without it fits) are no faster than
  // their twin.
  ASSERT_FALSE(s["dominated"].empty());
  for (const json& c : s["dominated"]) {
    json twin = c;
    twin["recompute"] = "none";
    ASSERT_TRUE(ok.count(key(c)) && ok.count(key(twin))) << key(c);
    EXPECT_GE(ok[key(c)], ok[key(twin)]) << key(c);
  }
  EXPECT_EQ(s["candidates"]["simulated"].get<size_t>() + s["dominated"].size(), ok.size());

  // The best: the brute force's fastest, never pruned, is the search's first.
  const auto fastest = std::min_element(ok.begin(), ok.end(), [](auto& a, auto& c) { return a.second < c.second; });
  ASSERT_FALSE(s["best"].empty());
  EXPECT_EQ(key(s["best"][0]["strategy"]), fastest->first);
  EXPECT_DOUBLE_EQ(s["best"][0]["iteration_time_s"].get<double>(), fastest->second);
  for (const json& r : s["best"]) EXPECT_GE(r["iteration_time_s"].get<double>(), fastest->second);
  // Each row's command re-runs it in the fidelity that gave its numbers.
  for (const char* rows : {"best", "estimated"})
    for (const json& r : s[rows]) {
      const std::string command = r["command"];
      EXPECT_NE(command.find("--fidelity=" + r["fidelity"].get<std::string>()), std::string::npos) << command;
      EXPECT_EQ(command.find("--fidelity=", command.find("--fidelity=") + 1), std::string::npos) << command;
    }
}

// --keep-dominated simulates the candidates that recompute more than a twin that fits.
TEST(Search, KeepDominatedSimulatesWhatRecomputesMoreThanATwinThatFits) {
  const std::string dir = temp_dir();
  const std::string space = "search --model gpt3-13b --platform dgx-a100 --nodes 2 --global-batch 32 --tp 2,4 --pp 1"
                            " --cp 1 --micro-batch 1 --zero 1 --recompute none,full --schedule 1f1b"
                            " --sequence-parallel true --top 1 -j 2 --report ";
  const auto pruned = tessera(space + dir + "/pruned.json");
  const auto kept = tessera(space + dir + "/kept.json --keep-dominated");
  ASSERT_EQ(pruned.status, 0) << pruned.err;
  ASSERT_EQ(kept.status, 0) << kept.err;
  const json p = json::parse(read_file(dir + "/pruned.json")), k = json::parse(read_file(dir + "/kept.json"));
  EXPECT_EQ(p["candidates"]["dominated"], 2);  // full recompute at tp 2 and 4: both fit without
  EXPECT_EQ(p["candidates"]["simulated"], 2);
  EXPECT_NE(pruned.out.find("the 2 dominated strategies, not simulated"), std::string::npos) << pruned.out;
  EXPECT_EQ(k["candidates"]["dominated"], 0);
  EXPECT_EQ(k["candidates"]["simulated"], 4);
  EXPECT_EQ(k["best"][0]["strategy"], p["best"][0]["strategy"]);
}

TEST(Search, Gpt3ThirteenBillionOnTwoDgxA100IsAtLeastAsFastAsEveryBruteForceRun) {
  const std::string dir = temp_dir();
  const std::string space = " --tp 2,4,8 --pp 1,2 --cp 1 --micro-batch 1 --zero 0,1 --recompute none"
                            " --schedule 1f1b --sequence-parallel true";
  const auto search = tessera("search --model gpt3-13b --platform dgx-a100 --nodes 2 --global-batch 32" + space +
                              " -j 2 --report " + dir + "/s13.json");
  ASSERT_EQ(search.status, 0) << search.err;
  const json s = json::parse(read_file(dir + "/s13.json"));
  const std::string sweep = write_file("brute13.yaml",
      "base: {model: gpt3-13b, platform: dgx-a100, nodes: 2, global-batch: 32, cp: 1, micro-batch: 1,\n"
      "       schedule: 1f1b, sequence-parallel: true, fidelity: flow,\n"
      "       recompute: none}\n"
      "grid:\n  tp: [2, 4, 8]\n  pp: [1, 2]\n  zero: [0, 1]\n");
  const auto brute = tessera("sweep " + sweep + " -j 2 --out " + dir + "/brute13");
  ASSERT_EQ(brute.status, 0) << brute.err;
  const json b = json::parse(read_file(dir + "/brute13.json"));
  double fastest = 1e30;
  int ok = 0, oom = 0;
  for (const json& row : b["rows"]) {
    if (row["status"] == "ok") ++ok, fastest = std::min(fastest, row["iteration_time_s"].get<double>());
    oom += row["status"] == "oom";
  }
  // Redundant candidates (ZeRO-1 with dp 1) run in the brute force as their ZeRO-0 twins.
  EXPECT_EQ(s["candidates"]["simulated"].get<int>() + s["candidates"]["redundant"].get<int>(), ok);
  EXPECT_EQ(s["candidates"]["out_of_memory"].get<int>(), oom);
  EXPECT_GT(oom, 0);
  ASSERT_FALSE(s["best"].empty());
  EXPECT_LE(s["best"][0]["iteration_time_s"].get<double>(), fastest);
  EXPECT_DOUBLE_EQ(s["best"][0]["iteration_time_s"].get<double>(), fastest);
}

}  // namespace
