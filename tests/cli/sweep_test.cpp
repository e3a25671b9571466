// tessera sweep: rows identical with -j 1, -j 2 and mpirun -np 3; an interrupted sweep resumes
// without re-running finished rows; bad sweep files name file, line and key.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "run_tessera.h"

using cli_testing::lines;
using cli_testing::read_file;
using cli_testing::tessera;
using cli_testing::temp_dir;
using cli_testing::write_file;

namespace {

// Two platform variations x three strategies, and a run that cannot fit and one that is invalid.
const char* kSweep =
    "base:\n"
    "  model: gpt3-1.3b\n"
    "  platform: dgx-a100\n"
    "  global-batch: 16\n"
    "  fidelity: flow\n"
    "grid:\n"
    "  set.node.nvlink.link.bandwidth_gb_per_s: [12.5, 25]\n"
    "runs:\n"
    "  - {name: dp8, tp: 1}\n"
    "  - {name: tp2, tp: 2}\n"
    "  - {name: tp2-pp2, tp: 2, pp: 2, recompute: full}\n"
    "  - {name: tp3, tp: 3}\n"
    "  - {name: big, model: gpt3-13b}\n";

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

TEST(Sweep, RowsAreIdenticalWithOneTwoJobsAndThreeMpiRanks) {
  const std::string file = write_file("grid.yaml", kSweep);
  const std::string dir = temp_dir();
  const auto one = tessera("sweep " + file + " -j 1 --out " + dir + "/j1");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("[10/10]"), std::string::npos) << one.out;
  const auto two = tessera("sweep " + file + " -j 2 --out " + dir + "/j2");
  ASSERT_EQ(two.status, 0) << two.err;
  const std::string csv = read_file(dir + "/j1.csv");
  EXPECT_EQ(csv, read_file(dir + "/j2.csv"));
  EXPECT_EQ(read_file(dir + "/j1.json"), read_file(dir + "/j2.json"));
  EXPECT_EQ(lines(csv), 11);

  const auto j = nlohmann::json::parse(read_file(dir + "/j1.json"));
  ASSERT_EQ(j["rows"].size(), 10u);
  // Grid inside each listed run: dp8 at 12.5 then 25 GB/s NVLink; the faster links are faster.
  EXPECT_EQ(j["rows"][0]["parameters"]["set.node.nvlink.link.bandwidth_gb_per_s"], "12.5");
  EXPECT_EQ(j["rows"][0]["status"], "ok");
  EXPECT_LT(j["rows"][1]["iteration_time_s"].get<double>(), j["rows"][0]["iteration_time_s"].get<double>());
  EXPECT_EQ(j["rows"][6]["status"], "invalid");
  EXPECT_NE(j["rows"][6]["error"].get<std::string>().find("does not divide the 8 GPUs"), std::string::npos);
  EXPECT_EQ(j["rows"][8]["status"], "oom");
  EXPECT_GT(j["rows"][8]["peak_memory_gib"].get<double>(), 80.0);
  EXPECT_EQ(j["statuses"]["ok"], 6);

  if (!TESSERA_BUILT_WITH_MPI) GTEST_SKIP() << "tessera built without MPI: the mpirun comparison is skipped";
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found: the MPI comparison is skipped (install openmpi-bin)";
  const std::string mpi = std::string("mpirun --allow-run-as-root --oversubscribe -np 3 ") + TESSERA_BIN +
                          " sweep " + file + " --out " + dir + "/mpi > " + dir + "/mpi.log 2>&1";
  ASSERT_EQ(std::system(mpi.c_str()), 0) << read_file(dir + "/mpi.log");
  EXPECT_NE(read_file(dir + "/mpi.log").find("on each of 3 ranks"), std::string::npos) << read_file(dir + "/mpi.log");
  EXPECT_EQ(csv, read_file(dir + "/mpi.csv"));
  EXPECT_EQ(read_file(dir + "/j1.json"), read_file(dir + "/mpi.json"));
}

TEST(Sweep, KilledHalfwayAndRestartedRunsOnlyWhatHadNotFinished) {
  // Eight packet-fidelity runs of about 0.4 s each.
  const std::string file = write_file("resume.yaml",
                                      "base: {model: gpt3-1.3b, platform: dgx-a100, fidelity: packet}\n"
                                      "grid:\n  global-batch: [8, 16]\n  tp: [1, 2, 4, 8]\n");
  const std::string prefix = temp_dir() + "/resume";
  const std::string journal = prefix + ".journal.jsonl";
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(TESSERA_BIN, "tessera", "sweep", file.c_str(), "--out", prefix.c_str(), (char*)nullptr);
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (lines(read_file(journal)) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const int finished = lines(read_file(journal));
  ASSERT_GE(finished, 3);
  ASSERT_LT(finished, 8) << "the sweep finished before it could be interrupted";

  const auto again = tessera("sweep " + file + " --out " + prefix);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find(std::to_string(finished) + " finished rows kept"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("ran " + std::to_string(8 - finished) + ", kept " + std::to_string(finished)),
            std::string::npos) << again.out;
  EXPECT_EQ(lines(read_file(journal)), 8);  // every run journaled once: none ran twice

  const auto fresh = tessera("sweep " + file + " -j 2 --fresh --out " + temp_dir() + "/fresh");
  ASSERT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_EQ(read_file(prefix + ".csv"), read_file(temp_dir() + "/fresh.csv"));
}

TEST(Sweep, AJournalLineCutShortIsDroppedAndItsRunRunsAgain) {
  const std::string file = write_file("cut.yaml", kSweep);
  const std::string prefix = temp_dir() + "/cut";
  ASSERT_EQ(tessera("sweep " + file + " -j 2 --out " + prefix).status, 0);
  const std::string csv = read_file(prefix + ".csv");
  // Keep four whole lines and half of the fifth, as a sweep killed while writing leaves it.
  const std::string journal = read_file(prefix + ".journal.jsonl");
  size_t end = 0;
  for (int i = 0; i < 4; ++i) end = journal.find('\n', end) + 1;
  const size_t fifth = journal.find('\n', end);
  std::ofstream(prefix + ".journal.jsonl", std::ios::trunc) << journal.substr(0, end + (fifth - end) / 2);
  const auto again = tessera("sweep " + file + " --out " + prefix);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("ran 6, kept 4"), std::string::npos) << again.out;
  EXPECT_EQ(lines(read_file(prefix + ".journal.jsonl")), 10);
  EXPECT_EQ(read_file(prefix + ".csv"), csv);
}

TEST(Sweep, BadSweepFilesNameFileLineAndKey) {
  struct Case {
    const char* text;
    const char* fragment;
  };
  const Case cases[] = {
      {"grid:\n  tp: [1, 2]\n  tpp: [1]\n", "bad.yaml:3: key 'tpp': not an option of tessera run"},
      {"grid:\n  tp: [1, two]\n", "bad.yaml:2: key 'tp': --tp expects an integer"},
      {"base:\n  report: r.json\ngrid: {tp: [1]}\n", "bad.yaml:2: key 'report': the sweep sets it"},
      {"grid:\n  tp: []\n", "bad.yaml:2: key 'tp': an empty list of values"},
      {"runs:\n  - {tp: 1}\n  - {fidelity: exact}\n", "bad.yaml:3: key 'fidelity': unknown fidelity 'exact'"},
      {"grid:\n  set.network.oversubscriptions: [1, 2]\n", "bad.yaml:2: key 'set.network.oversubscriptions'"},
      {"sweeps:\n  tp: [1]\n", "bad.yaml:1: key 'sweeps': unknown key (base, grid or runs)"},
      {"base: {model: gpt3-1.3b}\n", "bad.yaml:1: a sweep needs a grid or runs"},
      {"grid:\n  model: [gpt3-1.3b, gpt5]\n", "bad.yaml:2: key 'model'"},
      {"runs:\n  - {tp: 2}\ngrid:\n  tp: [1]\n", "bad.yaml:2: key 'tp': also varied by the grid (line 4)"},
  };
  for (const Case& c : cases) {
    const std::string file = write_file("bad.yaml", c.text);
    const auto r = tessera("sweep " + file + " --out " + temp_dir() + "/bad");
    EXPECT_EQ(r.status, 2) << c.text;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
