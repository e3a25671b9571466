// The tessera executable as a user runs it: the default scenario, reports, traces,
// determinism, and one clear line with exit status 2 for every kind of bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_tessera.h"

namespace {

using namespace cli_testing;

// Bad input: status 2, exactly one line on stderr starting "tessera: error:", nothing on
// stdout, no SystemC report.
void expect_bad_input(const std::string& args, const std::string& must_mention) {
  SCOPED_TRACE(args);
  const Result r = tessera(args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.find("SystemC"), std::string::npos) << r.err;
}

TEST(Cli, DefaultScenarioRunsAndSummarizes) {
  const Result r = tessera("");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos);
  EXPECT_NE(r.out.find("8 x H100-SXM5-80GB"), std::string::npos);
  for (int g = 0; g < 8; ++g) EXPECT_NE(r.out.find("gpu" + std::to_string(g) + " "), std::string::npos);
  EXPECT_EQ(r.out.find("SystemC"), std::string::npos) << "no SystemC banner";
}

TEST(Cli, HelpListsCommandsAndOptions) {
  const Result top = tessera("--help");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("run"), std::string::npos);
  const Result run = tessera("run --help");
  EXPECT_EQ(run.status, 0);
  for (const char* option : {"--config", "--report", "--trace", "--platform", "--gpus", "--job",
                             "--layers", "--chunk-kib", "--bucket-mb"})
    EXPECT_NE(run.out.find(option), std::string::npos) << option;
}

TEST(Cli, ReportHasUnitsInKeysAndIsByteIdenticalAcrossRuns) {
  const std::string a = temp_dir() + "/a.json", b = temp_dir() + "/b.json";
  ASSERT_EQ(tessera("run --layers 4 --report " + a).status, 0);
  ASSERT_EQ(tessera("run --layers 4 --report " + b).status, 0);
  const std::string ra = read_file(a), rb = read_file(b);
  ASSERT_FALSE(ra.empty());
  EXPECT_EQ(ra, rb);
  const auto j = nlohmann::json::parse(ra);
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0);
  EXPECT_GT(j["throughput_samples_per_s"].get<double>(), 0);
  ASSERT_EQ(j["ranks"].size(), 8u);
  const auto& rank = j["ranks"][0];
  const double parts = rank["compute_time_s"].get<double>() +
                       rank["exposed_communication_time_s"].get<double>() +
                       rank["idle_time_s"].get<double>();
  EXPECT_NEAR(parts, j["iteration_time_s"].get<double>(), 1e-9);
  // The iteration by cause, per rank and as the mean over ranks: each adds up to the time.
  for (const auto* causes : {&rank["time_by_cause_s"], &j["time_by_cause_s"]}) {
    double sum = 0;
    for (const auto& [cause, seconds] : causes->items()) sum += seconds.get<double>();
    EXPECT_EQ(causes->size(), 7u);
    EXPECT_NEAR(sum, j["iteration_time_s"].get<double>(), 1e-9);
  }
  EXPECT_GT(j["links"].size(), 0u);
}

// A summary report is the full one without its ranks and links; both hold the means over
// ranks and the largest peak memory, which are those of the ranks listed in full.
TEST(Cli, ASummaryReportIsTheFullOneWithoutRanksAndLinks) {
  const std::string full = temp_dir() + "/full.json", summary = temp_dir() + "/summary.json";
  ASSERT_EQ(tessera("run --layers 4 --pp 2 --tp 2 --report " + full).status, 0);
  ASSERT_EQ(tessera("run --layers 4 --pp 2 --tp 2 --report-detail summary --report " + summary).status, 0);
  auto f = nlohmann::json::parse(read_file(full));
  const auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_FALSE(s.contains("ranks"));
  EXPECT_FALSE(s.contains("links"));
  const auto& ranks = f["ranks"];
  ASSERT_EQ(ranks.size(), 8u);
  double gemm = 0, idle = 0, exposed = 0, peak = 0;
  for (const auto& rank : ranks) {
    gemm += rank["compute_by_cause_s"]["gemm"].get<double>() / 8;
    idle += rank["idle_time_s"].get<double>() / 8;
    exposed += rank["exposed_communication_time_s"].get<double>() / 8;
    peak = std::max(peak, rank["peak_memory_gib"].get<double>());
  }
  const auto& mean = s["mean_over_ranks"];
  EXPECT_GT(gemm, 0);
  EXPECT_NEAR(mean["compute_by_cause_s"]["gemm"].get<double>(), gemm, 1e-12);
  EXPECT_NEAR(mean["idle_time_s"].get<double>(), idle, 1e-12);
  EXPECT_NEAR(mean["exposed_communication_time_s"].get<double>(), exposed, 1e-12);
  EXPECT_GT(peak, 0);
  EXPECT_EQ(s["peak_memory_gib"].get<double>(), peak);
  f.erase("ranks");
  f.erase("links");
  EXPECT_EQ(f, s);
  expect_bad_input("run --layers 2 --report-detail some", "--report-detail: 'some' is not full or summary");
}

// A full report's ranks and links are written one at a time (write_report), byte for byte as
// the whole tree dumps: the file is its own tree dumped again. With two nodes, the ranks and
// every kind of link; analytic fidelity, whose links are none, keeps its empty list.
TEST(Cli, AFullReportWrittenPieceByPieceIsItsTreeDumped) {
  for (const std::string fidelity : {"flow", "packet", "analytic"}) {
    const std::string path = temp_dir() + "/pieces-" + fidelity + ".json";
    const Result r = tessera("run -q --platform dgx-h100 --nodes 2 --layers 2 --pp 2 --tp 2 --dp 4 --global-batch 8 "
                             "--fidelity " + fidelity + " --report " + path);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string text = read_file(path);
    const auto j = nlohmann::ordered_json::parse(text);
    EXPECT_EQ(j["ranks"].size(), 16u) << fidelity;
    if (fidelity != "analytic") {
      EXPECT_GT(j["links"].size(), 16u) << fidelity;
    }
    EXPECT_EQ(j.dump(1) + "\n", text) << fidelity;
  }
}

TEST(Cli, TraceHasATrackPerGpuStreamAndLinkCounters) {
  const std::string t = temp_dir() + "/trace.json";
  ASSERT_EQ(tessera("run --layers 2 --trace " + t).status, 0);
  const auto j = nlohmann::json::parse(read_file(t));
  int threads = 0, complete = 0, counters = 0, causes = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
    if (e["ph"] == "X") ++complete;
    if (e["ph"] == "C") ++counters;
    if (e.value("cat", "") == "cause") ++causes;
  }
  EXPECT_EQ(threads, 8 * (2 + 7));  // compute and dp_comm, and a lane per cause, on each of 8 GPUs
  EXPECT_GE(causes, 8 * 2);         // at least compute and the optimizer on each
  EXPECT_GT(complete, 8 * 20);
  EXPECT_GT(counters, 16);
}

TEST(Cli, ConfigFileSetsOptionsLikeTheCommandLine) {
  const std::string cfg = write_file("ok.cfg", "# small model\nlayers = 2\nhidden=1024\n\nheads = 8\ntp = 2\n");
  const std::string from_file = temp_dir() + "/cfg.json", from_flags = temp_dir() + "/flags.json";
  const Result r = tessera("run --config " + cfg + " --report " + from_file);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(tessera("run --layers 2 --hidden 1024 --heads 8 --tp 2 --report " + from_flags).status, 0);
  EXPECT_EQ(read_file(from_file), read_file(from_flags));
  const auto j = nlohmann::json::parse(read_file(from_file));
  // The 2-layer model has far fewer FLOPs than the 24-layer default.
  EXPECT_LT(j["workload"]["model_flops_per_iteration"].get<double>(), 1e14);
}

TEST(Cli, ModelsListsTheZooAndAModelRunsWithAHybridStrategy) {
  const Result models = tessera("models");
  ASSERT_EQ(models.status, 0);
  for (const char* m : {"gpt3-175b", "llama3-8b", "mixtral-8x7b", "bert-large"})
    EXPECT_NE(models.out.find(m), std::string::npos) << m;
  const std::string rep = temp_dir() + "/hybrid.json";
  const Result r = tessera("run --model gpt3-1.3b --layers 4 --tp 2 --pp 2 --global-batch 8 "
                           "--sequence-parallel --report " + rep);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(rep));
  EXPECT_GT(j["mfu"].get<double>(), 0.05);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  EXPECT_GT(j["ranks"][0]["peak_memory_gib"].get<double>(), 0.1);
}

TEST(Cli, OutOfMemoryExitsWithStatus4UnlessAllowed) {
  const Result r = tessera("run --model llama2-70b --tp 8");
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.err.find("out of memory on rank 0: needs"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1);
}

TEST(Cli, JobFileRunsAndADeadlockExitsWithStatus3) {
  const std::string ok = write_file("ok.yaml", R"(
communicators: {world: [0, 1]}
ranks:
  - ops:
      - {name: fwd, kind: compute, gemm: [4096, 4096, 4096]}
      - {name: ar, kind: allreduce, communicator: world, bytes: 1048576, deps: [fwd]}
  - ops:
      - {name: fwd, kind: compute, gemm: [4096, 4096, 4096]}
      - {name: ar, kind: allreduce, communicator: world, bytes: 1048576, deps: [fwd]}
)");
  const Result good = tessera("run --job " + ok);
  EXPECT_EQ(good.status, 0) << good.err;
  const std::string stuck = write_file("stuck.yaml", R"(
communicators: {world: [0, 1, 2]}
ranks:
  - ops: [{name: grads, kind: allreduce, communicator: world, bytes: 4096}]
  - ops: [{name: grads, kind: allreduce, communicator: world, bytes: 4096}]
  - ops: [{name: other, kind: compute, flops: 1e9}]
)");
  const Result r = tessera("run --job " + stuck + " --report " + temp_dir() + "/stuck.json");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("rank 0 is stuck at op 0 'grads'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1 is stuck"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("waiting for rank 2 that never joined"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(temp_dir() + "/stuck.json").empty()) << "no report for a failed run";
}

TEST(Cli, BadInputGetsOneLineAndStatus2) {
  expect_bad_input("run --no-such-option", "no-such-option");
  expect_bad_input("frobnicate", "unknown command 'frobnicate'");
  expect_bad_input("run --config /nonexistent/tessera.cfg", "/nonexistent/tessera.cfg");
  expect_bad_input("run --job /nonexistent/job.yaml", "/nonexistent/job.yaml");
  expect_bad_input("run --layers -3", "layers");
  expect_bad_input("run --layers 0", "layers");
  expect_bad_input("run --hidden abc", "hidden");
  expect_bad_input("run --chunk-kib 0", "chunk-kib");
  expect_bad_input("run --gpus -1", "gpus");
  expect_bad_input("run --nvlink-bandwidth-gbps -5", "--nvlink-bandwidth-gbps: must be a number in [0.001, 1000000], got -5");
  expect_bad_input("run --bucket-mb 0", "bucket-mb");
  expect_bad_input("run --heads 7", "heads (7) must divide hidden (2048)");
  expect_bad_input("run --global-batch 20", "global-batch (20)");
  expect_bad_input("run --platform nowhere", "nowhere: no such platform file, and no shipped platform of that name");
  expect_bad_input("run --dtype fp7", "fp7");
  expect_bad_input("run --model no-such-model", "unknown model 'no-such-model'");
  expect_bad_input("run --tp 3", "tp * pp * cp (3 * 1 * 1 = 3) does not divide the 8 GPUs");
  expect_bad_input("run --report /nonexistent-dir/r.json --layers 1", "/nonexistent-dir/r.json");
  expect_bad_input("run --fidelity exact", "--fidelity: unknown fidelity 'exact'");
  expect_bad_input("collective --fidelity exact", "--fidelity: unknown fidelity 'exact'");
  expect_bad_input("run --tp 4 --embedding-tp 3", "embedding.tp (3) does not divide tp (4)");
}

TEST(Cli, FlowFidelityRunsAndSaysSoInTheReport) {
  // Two DGX A100 nodes, data parallel: flow fidelity is within a few percent of packet
  // fidelity with a fraction of its fabric transactions.
  const std::string dir = temp_dir();
  const std::string args = "run --platform dgx-a100 --nodes 2 --dp 16 --global-batch 32 --layers 4 --report ";
  const Result packet = tessera(args + dir + "/packet.json");
  const Result flow = tessera(args + dir + "/flow.json --fidelity flow");
  ASSERT_EQ(packet.status, 0) << packet.err;
  ASSERT_EQ(flow.status, 0) << flow.err;
  const auto p = nlohmann::json::parse(read_file(dir + "/packet.json"));
  const auto f = nlohmann::json::parse(read_file(dir + "/flow.json"));
  EXPECT_EQ(p["simulation"]["fidelity"], "packet");
  EXPECT_EQ(f["simulation"]["fidelity"], "flow");
  EXPECT_GT(f["simulation"]["flows"].get<uint64_t>(), 0u);
  EXPECT_NEAR(f["iteration_time_s"].get<double>(), p["iteration_time_s"].get<double>(),
              0.03 * p["iteration_time_s"].get<double>());
  EXPECT_LT(f["simulation"]["fabric_transactions"].get<uint64_t>(),
            p["simulation"]["fabric_transactions"].get<uint64_t>() / 10);
  // auto: packet up to 64 GPUs, flow above.
  const Result small = tessera("run --platform dgx-a100 --nodes 2 --dp 16 --global-batch 16 --layers 1");
  ASSERT_EQ(small.status, 0) << small.err;
  EXPECT_EQ(small.out.find("flow fidelity"), std::string::npos) << small.out;
  const Result large = tessera("run --platform dgx-a100 --nodes 9 --dp 72 --global-batch 72 --layers 1");
  ASSERT_EQ(large.status, 0) << large.err;
  EXPECT_NE(large.out.find("(72 x A100-SXM4-80GB), flow fidelity"), std::string::npos) << large.out;
  // The same links by name in both reports.
  ASSERT_EQ(f["links"].size(), p["links"].size());
  EXPECT_EQ(f["links"][0]["name"], p["links"][0]["name"]);
}

TEST(Cli, StrategyFileWithItsOwnEmbeddingTensorParallelism) {
  const std::string strategy = write_file("embedding.yaml",
                                          "tp: 4\n"
                                          "global-batch: 4\n"
                                          "embedding:\n"
                                          "  tp: 2\n");
  const std::string rep = temp_dir() + "/embedding.json";
  const Result r = tessera("run --model gpt3-1.3b --layers 2 --gpus 4 --strategy " + strategy + " --report " + rep);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(rep));
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0.0);
  const std::string bad = write_file("bad-embedding.yaml", "tp: 4\nembedding:\n  tp: two\n");
  const Result b = tessera("run --gpus 4 --strategy " + bad);
  EXPECT_EQ(b.status, 2);
  EXPECT_NE(b.err.find("bad-embedding.yaml:3: key 'embedding.tp'"), std::string::npos) << b.err;
}

TEST(Cli, UnreadableFileIsBadInput) {
  if (geteuid() == 0) {
    // root reads any file: a directory stands in for an unreadable file.
    expect_bad_input("run --config " + temp_dir(), temp_dir());
  } else {
    const std::string path = write_file("secret.cfg", "layers = 2\n");
    chmod(path.c_str(), 0);
    expect_bad_input("run --config " + path, path);
  }
}

TEST(Cli, MalformedConfigFilesNameFileLineAndKey) {
  const std::string unknown = write_file("unknown.cfg", "layers = 2\nlayrs = 4\n");
  expect_bad_input("run --config " + unknown, unknown + ":2: key 'layrs': unknown key");
  const std::string no_eq = write_file("noeq.cfg", "# comment\nlayers 4\n");
  expect_bad_input("run --config " + no_eq, no_eq + ":2: expected 'key = value'");
  const std::string bad_value = write_file("badvalue.cfg", "hidden = 1024\n\nlayers = many\n");
  expect_bad_input("run --config " + bad_value, bad_value + ":3: key 'layers'");
  const std::string empty_value = write_file("empty.cfg", "layers =\n");
  expect_bad_input("run --config " + empty_value, empty_value + ":1: key 'layers': missing value");
}

TEST(Cli, MalformedJobFilesNameFileLineAndKey) {
  const std::string syntax = write_file("syntax.yaml", "ranks:\n  - ops: [ {kind: compute\n");
  expect_bad_input("run --job " + syntax, syntax + ":");
  const std::string unknown = write_file("unknown.yaml", "ranks:\n  - ops:\n      - {kind: compute, flops: 1, flopz: 2}\n");
  expect_bad_input("run --job " + unknown, unknown + ":3: key 'ranks[0].ops[0].flopz': unknown key");
  const std::string negative = write_file("neg.yaml", "ranks:\n  - ops:\n      - kind: compute\n        flops: -5\n");
  expect_bad_input("run --job " + negative, negative + ":4: key 'ranks[0].ops[0].flops': must be a number in [0, 1e+21], got -5");
  const std::string zero = write_file("zero.yaml", "communicators: {w: [0, 1]}\nranks:\n  - ops: [{kind: allreduce, communicator: w, bytes: 0}]\n  - ops: [{kind: allreduce, communicator: w, bytes: 0}]\n");
  expect_bad_input("run --job " + zero, "bytes': must be an integer in [1, 1125899906842624], got 0");
  const std::string nocomm = write_file("nocomm.yaml", "ranks:\n  - ops: [{kind: allreduce, communicator: w, bytes: 8}]\n");
  expect_bad_input("run --job " + nocomm, "unknown communicator 'w'");
}

}  // namespace

namespace {

// The rows of `tessera collective`'s table.
struct TableRow {
  double size = 0, count = 0, root = 0, time = 0, algbw = 0, busbw = 0;
  std::string type, redop, label;
};
std::vector<TableRow> table_rows(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  std::vector<TableRow> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    TableRow r;
    f >> r.size >> r.count >> r.type >> r.redop >> r.root >> r.time >> r.algbw >> r.busbw >> r.label;
    EXPECT_FALSE(f.fail()) << line;
    rows.push_back(r);
  }
  return rows;
}

TEST(CliCollective, PrintsTheNcclTestsTableWithBusBandwidth) {
  const Result r = tessera("collective --platform dgx-h100 --op allreduce -b 1M -e 4M");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* column : {"size", "count", "type", "time", "algbw", "busbw"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column;
  // Three rows (1M, 2M, 4M); busbw = algbw * 2(n-1)/n on each.
  const std::vector<TableRow> rows = table_rows(r.out);
  for (const TableRow& row : rows) {
    EXPECT_EQ(row.count, row.size / 4);
    EXPECT_NEAR(row.algbw, row.size / (row.time * 1e-6) / 1e9, 0.01 + 0.01 * row.algbw);
    EXPECT_NEAR(row.busbw, row.algbw * 1.75, 0.02 + 0.01 * row.busbw);
  }
  EXPECT_EQ(rows.size(), 3u);
  // The same inputs give the same output, byte for byte.
  EXPECT_EQ(tessera("collective --platform dgx-h100 --op allreduce -b 1M -e 4M").out, r.out);
}

TEST(CliCollective, EachSizeStartsAfterABarrierAsInNcclTests) {
  // Across four DGX H100 nodes the double binary tree's leaves finish a call before its inner
  // nodes (they carry half of an inner node's network bytes). nccl-tests times each size after
  // a barrier; a sweep that let the leaves start the next size early timed 8 GiB 50% slower
  // than alone (the skew of the sizes before it, and the next size's traffic slowing the last).
  const std::string args = "collective --platform dgx-h100 --nodes 4 --fidelity flow ";
  const Result sweep = tessera(args + "-b 1G -e 8G");
  const Result alone = tessera(args + "-b 8G -e 8G");
  const Result first = tessera(args + "-b 1G -e 1G");
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const std::vector<TableRow> rows = table_rows(sweep.out), one = table_rows(alone.out), head = table_rows(first.out);
  ASSERT_EQ(rows.size(), 4u) << sweep.out;
  ASSERT_EQ(one.size(), 1u) << alone.out;
  ASSERT_EQ(head.size(), 1u) << first.out;
  EXPECT_NE(rows.back().label.find("nvls_tree"), std::string::npos) << sweep.out;
  EXPECT_NEAR(rows.back().time, one[0].time, 1e-3 * one[0].time) << sweep.out << alone.out;
  EXPECT_NEAR(rows.front().time, head[0].time, 1e-3 * head[0].time) << sweep.out << first.out;
}

TEST(CliCollective, ATorusOrDragonflyNeverDeadlocksInPacketFidelity) {
  // Shortest-path ECMP on a torus or a dragonfly made cycles of full switch buffers: these runs
  // stopped with "the program cannot finish". Dimension-order routing and bubble flow control
  // on each ring of the torus (a chunk enters a ring only where two slots are free), and routes
  // local-global-local with a slot of each local link kept for chunks that crossed their
  // global link on the dragonfly, make every run end.
  const std::string kDragonfly =
      "collective --platform dgx-h100 --nodes 16 --set network.topology=dragonfly --set network.dragonfly_groups=4 "
      "--set network.dragonfly_routers_per_group=2 --set network.dragonfly_global_links_per_router=2";
  for (const std::string& args : std::vector<std::string>{
           "collective --platform torus-3d -b 64M -e 64M",
        "collective --platform torus-3d --nodes 16 --set network.torus_dims=[4,4] --set network.switch_buffer_bytes=262144 "
        "--op alltoall -b 16M -e 16M",
        "collective --platform torus-3d --nodes 16 --set network.torus_dims=[4,4] --set network.switch_buffer_bytes=262144 "
        "-b 64M -e 64M",
        kDragonfly + " --op alltoall -b 16M -e 16M", kDragonfly + " -b 64M -e 64M"}) {
    const Result r = tessera(args);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.err;
    const std::vector<TableRow> rows = table_rows(r.out);
    ASSERT_EQ(rows.size(), 1u) << r.out;
    EXPECT_GT(rows[0].busbw, 1.0) << args << "\n" << r.out;
  }
  // A training iteration on a 4x4 torus (its data-parallel rings cross the torus) stopped there
  // too; it now ends within 5% of flow fidelity's time.
  const std::string train = "run --platform torus-3d --nodes 16 --set network.torus_dims=[4,4] --model gpt3-1.3b "
                            "--layers 4 --tp 8 --pp 2 --dp 8 --global-batch 16 --fidelity ";
  auto iteration_ms = [](const std::string& out) {
    const size_t at = out.find("iteration time");
    return at == std::string::npos ? 0.0 : std::stod(out.substr(at + 14));
  };
  const Result packet = tessera(train + "packet"), flow = tessera(train + "flow");
  ASSERT_EQ(packet.status, 0) << packet.err;
  ASSERT_EQ(flow.status, 0) << flow.err;
  EXPECT_GT(iteration_ms(flow.out), 0.0) << flow.out;
  EXPECT_NEAR(iteration_ms(packet.out), iteration_ms(flow.out), 0.05 * iteration_ms(flow.out)) << packet.out << flow.out;
  // The reserved slot needs two chunks of room per switch port.
  expect_bad_input("collective --platform torus-3d -b 1M -e 1M --set network.switch_buffer_bytes=200000",
                   "network.switch_buffer_bytes: 200000 bytes hold fewer than two chunks");
  // A network whose routes can deadlock (links of the file's own) says so.
  const Result ring = tessera("collective --platform " + std::string(TESSERA_SOURCE_DIR) +
                              "/tests/platforms/good/ring-of-switches-links.yaml --op alltoall -b 64M -e 64M "
                              "--set network.switch_buffer_bytes=262144");
  EXPECT_EQ(ring.status, 3) << ring.err;
  EXPECT_EQ(lines(ring.err), 1) << ring.err;
  EXPECT_NE(ring.err.find("the fabric deadlocked"), std::string::npos) << ring.err;
}

TEST(CliCollective, ForcedAlgorithmAndProtocolAreUsed) {
  const Result r = tessera("collective --platform dgx-h100 -b 64M -e 64M --algorithm ring --protocol ll128");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ring/ll128"), std::string::npos) << r.out;
  const Result h = tessera("collective --platform dgx-h100 --nodes 2 -b 64M -e 64M --algorithm hierarchical --gpus-per-node 4");
  ASSERT_EQ(h.status, 0) << h.err;
  EXPECT_NE(h.out.find("hierarchical/"), std::string::npos) << h.out;
  const Result c = tessera("collective --platform dgx-a100 --nodes 2 --set network.in_network_reduction=true "
                           "-b 64M -e 64M --algorithm collnet");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("collnet/simple"), std::string::npos) << c.out;
  const Result run = tessera("run --platform dgx-a100 --nodes 2 --set network.in_network_reduction=true "
                             "--collective-algorithm sharp --layers 1");
  EXPECT_EQ(run.status, 0) << run.err;
}

// nccl-tests' n nodes x G GPUs (mpirun -npernode G): G GPUs of each node take part; one GPU of
// each of two DGX A100 is the usual NIC-to-NIC measurement, bound by one HDR NIC (25 GB/s).
TEST(CliCollective, NodesTimesGpusPerNodeRunsThoseGpus) {
  const Result one = tessera("collective --platform dgx-a100 --nodes 2 --gpus-per-node 1 -b 256M -e 256M --fidelity flow");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("2 GPUs (2 nodes x 1)"), std::string::npos) << one.out;
  const Result two = tessera("collective --platform dgx-a100 --nodes 2 --gpus-per-node 2 -b 256M -e 256M --fidelity flow");
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("4 GPUs (2 nodes x 2)"), std::string::npos) << two.out;
  auto busbw = [](const std::string& out) {
    std::istringstream in(out);
    std::string line;
    double size = 0, count = 0, time = 0, algbw = 0, bw = 0;
    std::string type, redop;
    int root = 0;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') std::istringstream(line) >> size >> count >> type >> redop >> root >> time >> algbw >> bw;
    return bw;
  };
  EXPECT_GT(busbw(one.out), 20.0) << one.out;
  EXPECT_LE(busbw(one.out), 25.0) << one.out;
  EXPECT_GT(busbw(two.out), busbw(one.out) * 1.5) << "two GPUs, two NICs: " << two.out;
}

TEST(CliCollective, SendRecvSendsToTheNextRankAtTheNvlinkRate) {
  // nccl-tests' sendrecv: rank r sends S to r + 1 and receives S from r - 1; busbw = algbw.
  // On one DGX H100 a 1 GiB message is striped over 32 channels (NCCL's most per peer), which
  // together pass the GPU's NVLinks to the NVSwitch and back: 18 links of 25 GB/s at 128 of 160
  // bytes, 360 GB/s.
  const Result r = tessera("collective --platform dgx-h100 --op sendrecv -b 1G -e 1G");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<TableRow> rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0].busbw, rows[0].algbw) << r.out;
  EXPECT_NEAR(rows[0].algbw, 360.0, 0.02 * 360.0) << r.out;
  EXPECT_EQ(rows[0].label, "p2p/simple") << r.out;
  // 32 MiB among 8 ranks: 4 channels (Tuner::p2p_plan) of 20.9 GB/s (the H100's
  // p2p_channel_gbps), then the receiver copies the last 512 KiB chunk out at a channel's rate.
  const Result small = tessera("collective --platform dgx-h100 --op sendrecv -b 32M -e 32M");
  ASSERT_EQ(small.status, 0) << small.err;
  const std::vector<TableRow> mid = table_rows(small.out);
  ASSERT_EQ(mid.size(), 1u) << small.out;
  const double expected = 33554432.0 / (33554432.0 / (4 * 20.9e9) + 524288.0 / 20.9e9) / 1e9;
  EXPECT_NEAR(mid[0].algbw, expected, 0.02 * expected) << small.out;
  expect_bad_input("collective --op sendrecv --algorithm ring", "sendrecv");
}

// The measured column of a 32 MiB row of `tessera collective ... --compare`.
double measured_at_32MiB(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string size;
    f >> size;
    if (size != "33554432") continue;
    std::vector<std::string> cells;
    for (std::string c; f >> c;) cells.push_back(c);
    return cells.size() >= 2 ? std::stod(cells[cells.size() - 2]) : -1;
  }
  return -1;
}

TEST(CliCollective, ComparesWithTheRowsOfItsOpAndTheChosenDataset) {
  const std::string data = std::string(TESSERA_SOURCE_DIR) + "/tests/validation/data/";
  // nccl_dgx_h100_8gpu_collectives.csv at 32 MiB: all_reduce 182.88 us, all_gather 120.61 us (in place).
  const Result reduce = tessera("collective --platform dgx-h100 --op all_reduce -b 32M -e 32M --compare " + data + "nccl_dgx_h100_8gpu_collectives.csv");
  ASSERT_EQ(reduce.status, 0) << reduce.err;
  EXPECT_NEAR(measured_at_32MiB(reduce.out), 33554432 / 182.88e-6 * 1.75 / 1e9, 0.01) << reduce.out;
  const Result gather = tessera("collective --platform dgx-h100 --op all_gather -b 32M -e 32M --compare " + data + "nccl_dgx_h100_8gpu_collectives.csv");
  ASSERT_EQ(gather.status, 0) << gather.err;
  EXPECT_NEAR(measured_at_32MiB(gather.out), 33554432 / 120.61e-6 * 0.875 / 1e9, 0.01) << gather.out;
  // nccl_allreduce_multinode.csv holds three datasets; a100-2n-hdr measured 626.3 us (in place) at 32 MiB on 16 GPUs.
  const Result hdr = tessera("collective --platform dgx-a100 --nodes 2 -b 32M -e 32M --dataset a100-2n-hdr --compare " + data + "nccl_allreduce_multinode.csv");
  ASSERT_EQ(hdr.status, 0) << hdr.err;
  EXPECT_NEAR(measured_at_32MiB(hdr.out), 33554432 / 626.3e-6 * 1.875 / 1e9, 0.01) << hdr.out;
}

TEST(CliCollective, BadInputGetsOneLineAndStatus2) {
  expect_bad_input("collective --op allshuffle", "allshuffle");
  expect_bad_input("collective --max-bytes 12X", "12X");
  expect_bad_input("collective --min-bytes 0", "min-bytes");
  expect_bad_input("collective -b 1G -e 1M", "max-bytes");
  expect_bad_input("collective -f 1", "step-factor");
  expect_bad_input("collective --algorithm zigzag", "zigzag");
  expect_bad_input("collective --protocol ll64", "ll64");
  expect_bad_input("collective --platform dgx-a100 --algorithm nvls", "in-switch reduction");
  expect_bad_input("collective --platform dgx-a100 --nodes 2 --algorithm collnet", "in-network reduction");
  expect_bad_input("collective --platform dgx-a100 --set network.in_network_reduction=true --algorithm collnet",
                   "two or more nodes");
  expect_bad_input("collective --algorithm halving-doubling --gpus 6 --set node.pcie.switches=2", "power-of-two");
  expect_bad_input("collective --gpus-per-node 9", "--gpus-per-node 9: a node of dgx-h100 has 8 GPUs");
  expect_bad_input("collective --compare /nonexistent/m.csv", "/nonexistent/m.csv");
  expect_bad_input("collective --svg out.svg", "--compare");
  expect_bad_input("run --collective-algorithm zigzag --layers 1", "zigzag");
}

}  // namespace
// --- Platforms: describe, the list, bad platform files -------------------------------------

// The number after `label` on the line that starts with it ("  nvswitch 24" -> 24).
double number_after(const std::string& text, const std::string& label) {
  const size_t at = text.find("\n" + label);
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + 1 + label.size());
}

TEST(Cli, DescribeShowsModulesLinksBisectionAndAPath) {
  const Result r = tessera("describe --platform dgx-a100 --nodes 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 nodes x 8 A100-SXM4-80GB = 32 GPUs; network: rail-optimized"), std::string::npos) << r.out;
  // Modules: per node 8 GPUs, 6 NVSwitches, 4 PCIe switches, 1 root complex, 8 NICs; radix-40
  // leaves hold 20 nodes, so the 4 nodes sit on 8 rail leaves joined by ceil(8 x 20 / 40) = 4 spines.
  EXPECT_EQ(number_after(r.out, "  gpu "), 32);
  EXPECT_EQ(number_after(r.out, "  nvswitch "), 24);
  EXPECT_EQ(number_after(r.out, "  pcie-switch "), 16);
  EXPECT_EQ(number_after(r.out, "  root-complex "), 4);
  EXPECT_EQ(number_after(r.out, "  nic "), 32);
  EXPECT_EQ(number_after(r.out, "  network-switch "), 12);
  // Links: 8 GPUs x 6 switches NVLink groups per node; PCIe: 8 GPUs + 8 NICs + 4 switch uplinks
  // per node; network: 32 NIC cables and 8 leaves x 4 spines.
  EXPECT_EQ(number_after(r.out, "  nvlink "), 4 * 48);
  EXPECT_EQ(number_after(r.out, "  pcie "), 4 * 20);
  EXPECT_EQ(number_after(r.out, "  network "), 32 + 32);
  // Bisection: 2 nodes x 8 NICs x 25 GB/s.
  EXPECT_NE(r.out.find("bisection bandwidth 400.0 GB/s per direction"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("routes across nodes: every shortest path (ECMP)"), std::string::npos) << r.out;
  // A torus says how it keeps its routes free of deadlock, and its path goes x, then y, then z.
  const Result torus = tessera("describe --platform torus-3d");
  ASSERT_EQ(torus.status, 0) << torus.err;
  EXPECT_NE(torus.out.find("routes across nodes: dimension order"), std::string::npos) << torus.out;
  EXPECT_NE(torus.out.find("torus(0,0,0) -> torus(3,0,0)"), std::string::npos) << torus.out;
  EXPECT_NE(torus.out.find("torus(3,0,0) -> torus(3,3,0)"), std::string::npos) << torus.out;
  // The path from gpu0 to gpu31 leaves through PCIe and a NIC and crosses the rail; its
  // bottleneck is the 200 Gb/s NIC.
  EXPECT_NE(r.out.find("path gpu0 -> gpu31"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node0.gpu0 -> node0.pcie0  pcie 31.5 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> node3.gpu7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bottleneck 25.0 GB/s"), std::string::npos) << r.out;
  // Within a node the path is NVLink.
  const Result in_node = tessera("describe --platform dgx-a100 --from 0 --to 5");
  ASSERT_EQ(in_node.status, 0) << in_node.err;
  EXPECT_NE(in_node.out.find("(2 hops)"), std::string::npos) << in_node.out;
  EXPECT_NE(in_node.out.find("bottleneck 300.0 GB/s"), std::string::npos) << in_node.out;
}

TEST(Cli, PlatformsListsTheShippedOnes) {
  const Result r = tessera("platforms");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"dgx-a100", "dgx-h100", "hgx-h200", "pcie-8gpu", "torus-3d", "nvl-256"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
}

TEST(Cli, BadPlatformsGetOneLineNamingFileLineKey) {
  const std::string bad = std::string(TESSERA_SOURCE_DIR) + "/tests/platforms/bad/";
  expect_bad_input("describe --platform " + bad + "unknown_key.yaml",
                   bad + "unknown_key.yaml:8: network.oversubscriptoin: unknown key");
  expect_bad_input("run --platform " + bad + "disconnected_links.yaml",
                   bad + "disconnected_links.yaml:9: network.links: the links leave node2 unreachable");
  expect_bad_input("describe --platform " + bad + "torus_dims_mismatch.yaml",
                   bad + "torus_dims_mismatch.yaml:8: network.torus_dims");
  expect_bad_input("describe --platform dgx-h100 --set network.oversubscription=0.5",
                   "--set network.oversubscription: must be a number in [1, 1024], got 0.5");
  expect_bad_input("run --platform dgx-h100 --set network.oversubscription=0.5",
                   "network.oversubscription");
}
