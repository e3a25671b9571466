// Symmetry (--symmetry, docs/fidelity.md): a run where replica groups replay one group gives the
// full run's report within 0.5% on jobs small enough to run in full, one of each kind; where
// the fabric treats replicas differently the GPUs whose calls come apart part from their
// representatives and run their own programs, or, where they cannot, the run is made in full.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "run_tessera.h"

namespace {

using cli_testing::tessera;

struct Outcome {
  double iteration_s = 0;
  size_t gpus = 0, simulated = 0, parted = 0, followed_parted = 0;
  int quiet_nodes = 0, echo_nodes = 0, rail_images = 0;
  std::map<std::string, double> link_bytes;
  std::vector<double> gpu_bytes_sent;
  std::string err;
};

Outcome run(const std::string& args, const std::string& symmetry) {
  const std::string report = cli_testing::temp_dir() + "/symmetry-" + symmetry + ".json";
  const cli_testing::Result r =
      tessera("run -q --fidelity flow " + args + " --symmetry " + symmetry + " --report " + report);
  EXPECT_EQ(r.status, 0) << r.err;
  Outcome out;
  out.err = r.err;
  if (r.status != 0) return out;
  const nlohmann::json j = nlohmann::json::parse(cli_testing::read_file(report));
  out.iteration_s = j["iteration_time_s"].get<double>();
  out.gpus = j["ranks"].size();
  out.simulated = j["simulation"]["gpus_simulated"].get<size_t>();
  out.parted = j["simulation"].value("gpus_parted", size_t(0));
  out.followed_parted = j["simulation"].value("gpus_followed_parted", size_t(0));
  out.quiet_nodes = j["simulation"].value("quiet_nodes", 0);
  out.echo_nodes = j["simulation"].value("echo_nodes", 0);
  out.rail_images = j["simulation"].value("rail_images", 0);
  for (const auto& link : j["links"]) out.link_bytes[link["name"].get<std::string>()] = link["bytes"].get<double>();
  for (const auto& rank : j["ranks"]) out.gpu_bytes_sent.push_back(rank["bytes_sent"].get<double>());
  return out;
}

// What becomes of the replay: it holds to the end, GPUs part from their representatives (some
// of them alike: one parts and the others replay it), or the run is made again in full.
enum class Replay { Holds, Parts, PartsAlike, InFull };

struct Case {
  const char* name;
  std::string args;
  Replay replay;
  int quiet_nodes = 0;  // nodes whose calls among their GPUs are left out
  int echo_nodes = 0;   // nodes whose simulated GPU makes their calls among their GPUs alone
  size_t most_parted = 0;  // where quiet nodes part echoing: at most this many GPUs run their own programs
  int rail_images = 0;     // GPUs whose calls across the network were another GPU's images
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::string kSmall = " --model gpt3-1.3b --layers 4 --micro-batch 1";

class Symmetry : public ::testing::TestWithParam<Case> {};

TEST_P(Symmetry, SameReportAsEveryGpuSimulated) {
  const Case& c = GetParam();
  const Outcome on = run(c.args, "on"), off = run(c.args, "off");
  ASSERT_GT(off.iteration_s, 0.0);
  EXPECT_EQ(off.simulated, off.gpus);
  EXPECT_LE(std::abs(on.iteration_s / off.iteration_s - 1), 0.005) << on.iteration_s << " vs " << off.iteration_s;
  if (c.replay != Replay::InFull) {
    EXPECT_LT(on.simulated, on.gpus / 4) << "the replicas should replay";
    EXPECT_EQ(on.err.find("drifted apart"), std::string::npos) << on.err;
    if (c.replay == Replay::Holds) EXPECT_EQ(on.parted, 0u);
    else EXPECT_GT(on.parted, 0u) << "GPUs should part from their representatives";
    if (c.replay == Replay::PartsAlike) {
      EXPECT_GT(on.followed_parted, on.parted) << "most should replay one that parted";
    }
    if (c.most_parted > 0) {
      EXPECT_LE(on.parted, c.most_parted) << "one GPU of a quiet node should part, echoing";
    }
    EXPECT_EQ(on.quiet_nodes, c.quiet_nodes);
    EXPECT_EQ(on.echo_nodes, c.echo_nodes);
    EXPECT_EQ(on.rail_images, c.rail_images);
    // Every link carried what it carries in the full run, quiet and echo nodes' links included.
    ASSERT_EQ(on.link_bytes.size(), off.link_bytes.size());
    for (const auto& [name, bytes] : off.link_bytes)
      EXPECT_LE(std::abs(on.link_bytes.at(name) - bytes), 0.005 * bytes) << name;
    // And every GPU sent what it sends in the full run (a quiet node's GPUs their mirror's calls
    // among the node's GPUs, a parted one's until it parted).
    ASSERT_EQ(on.gpu_bytes_sent.size(), off.gpu_bytes_sent.size());
    for (size_t r = 0; r < off.gpu_bytes_sent.size(); ++r)
      EXPECT_LE(std::abs(on.gpu_bytes_sent[r] - off.gpu_bytes_sent[r]), 0.005 * off.gpu_bytes_sent[r]) << "GPU " << r;
  } else {
    EXPECT_EQ(on.simulated, on.gpus);
    EXPECT_NE(on.err.find("drifted apart"), std::string::npos) << on.err;
    // The note names the call apart: the representative's op, its kind and size, and the GPU
    // replaying it that completed it farthest from it.
    EXPECT_TRUE(std::regex_search(on.err, std::regex("GPU [0-9]+'s op [0-9]+ '[^']+' \\([a-z]+, [0-9.]+ [KMG]?i?B\\), "
                                                     "[0-9.]+ us from GPU [0-9]+, which replays it")))
        << on.err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Suite, Symmetry,
    ::testing::Values(
        Case{"data_parallel", "--platform dgx-a100 --nodes 2 --tp 1 --pp 1 --dp 16 --global-batch 32" + kSmall, Replay::Holds},
        Case{"tensor_and_pipeline", "--platform dgx-a100 --nodes 4 --tp 4 --pp 2 --dp 4 --global-batch 32" + kSmall, Replay::Holds},
        Case{"interleaved", "--platform dgx-h100 --nodes 4 --model gpt3-1.3b --layers 8 --micro-batch 1 --tp 2 --pp 4 "
                            "--dp 4 --schedule interleaved --vpp 2 --global-batch 32", Replay::Holds, 0, 0, 0, 28},
        Case{"zero3", "--platform dgx-h100 --nodes 2 --tp 2 --pp 1 --dp 8 --zero 3 --global-batch 16" + kSmall, Replay::Holds},
        Case{"moe_expert_parallel", "--platform dgx-h100 --nodes 2 --model mixtral-8x7b --layers 2 --micro-batch 1 "
                                    "--tp 2 --pp 1 --dp 8 --ep 4 --sequence-parallel --global-batch 16", Replay::Holds},
        Case{"oversubscribed_fat_tree", "--platform dgx-a100 --nodes 6 --set network.oversubscription=3 --tp 4 "
                                        "--pp 2 --dp 6 --global-batch 24" + kSmall, Replay::Holds},
        Case{"multi_rail", "--platform hgx-h200 --nodes 4 --tp 8 --pp 2 --dp 2 --global-batch 16" + kSmall, Replay::Holds, 2, 2, 0, 28},
        // Each node one stage's tensor-parallel group: nodes 0 and 1 echo their rings (hidden 4096:
        // all-reduces of 16 MiB, rings; the gradient norm's small one a tree), 2 and 3 are quiet.
        // GPUs 2-7 of every node leave by their own NICs as GPUs 0 and 1 do by theirs: their
        // data-parallel calls and pipeline sends are images of those two's (rail images).
        Case{"tensor_parallel_nodes", "--platform dgx-a100 --nodes 4 --tp 8 --pp 2 --dp 2 --global-batch 16 --model "
                                      "gpt3-1.3b --layers 4 --hidden 4096 --heads 32 --micro-batch 1", Replay::Holds, 2, 2, 0, 28},
        // The same on DGX H100: the tensor-parallel all-reduces of 16 MiB run as NVLS, in-switch
        // reductions that nodes 0 and 1 echo too.
        Case{"nvls_nodes", "--platform dgx-h100 --nodes 4 --tp 8 --pp 2 --dp 2 --global-batch 16 --model "
                           "gpt3-1.3b --layers 4 --hidden 4096 --heads 32 --micro-batch 1", Replay::Holds, 2, 2, 0, 28},
        // Sequence parallel, its reduce-scatters and all-gathers made as NVLS (forced: the tuner
        // gives them rings), echoed alike.
        Case{"nvls_sequence_parallel", "--platform dgx-h100 --nodes 4 --tp 8 --pp 2 --dp 2 --global-batch 16 --model "
                                       "gpt3-1.3b --layers 4 --hidden 4096 --heads 32 --micro-batch 1 "
                                       "--sequence-parallel --collective-algorithm nvls", Replay::Holds, 2, 2, 0, 28},
        // One replica (dp 1): its data-parallel communicators hold one GPU each and move
        // nothing, so its nodes echo too.
        Case{"one_replica_nodes", "--platform dgx-h100 --nodes 2 --tp 8 --pp 2 --dp 1 --global-batch 8 --model "
                                  "gpt3-1.3b --layers 4 --hidden 4096 --heads 32 --micro-batch 1", Replay::Holds, 0, 2, 0, 14},
        Case{"torus", "--platform torus-3d --nodes 8 --set 'network.torus_dims=[2, 2, 2]' --tp 4 --pp 2 --dp 8 "
                      "--global-batch 16" + kSmall, Replay::Holds},
        // Uneven placement on an oversubscribed tree: replicas' transfers share uplinks unequally,
        // and the replaying GPUs part as their calls come apart.
        Case{"uneven_oversubscribed", "--platform dgx-a100 --nodes 10 --set network.oversubscription=4 --tp 1 "
                                      "--pp 4 --dp 20 --global-batch 40" + kSmall, Replay::Parts},
        // The same on nodes of one stage's tensor-parallel group (hidden 1024: small rings and
        // data-parallel calls): quiet nodes part whole, their calls among their GPUs simulated
        // from there.
        Case{"quiet_nodes_part", "--platform dgx-a100 --nodes 24 --set network.oversubscription=4 --tp 8 --pp 2 "
                                 "--dp 12 --global-batch 24 --hidden 1024 --heads 16" + kSmall, Replay::Parts, 22, 2, 0, 168},
        // Data-parallel all-reduces across 32 and 64 nodes run as NCCL's double binary tree, where
        // a rank's place in the trees sets its NIC's traffic: the replicas' pipeline transfers
        // beside it come apart from the representative's, those of replicas at like places
        // alike; one of each such group parts and the others replay it (nested parting).
        Case{"parting_alike", "--platform dgx-h100 --nodes 64 --model llama3-70b --layers 8 --micro-batch 1 --tp 2 "
                              "--pp 4 --dp 64 --global-batch 256", Replay::PartsAlike},
        // The quiet nodes mirror echo nodes (their NVLS all-reduces): of each that parts one GPU
        // parts, echoing the calls among the node's GPUs, and the others replay it (25 GPUs
        // part, where every GPU of those nodes would be 200).
        Case{"quiet_nodes_part_alike", "--platform dgx-h100 --nodes 64 --tp 8 --pp 2 --dp 32 --global-batch 128" + kSmall,
             Replay::PartsAlike, 62, 2, 40, 448},
        // The pipeline's gradient transfers of replicas under different leaves complete hundreds of
        // microseconds apart where their GPUs cannot part (echo nodes, and the nodes quiet nodes
        // mirror): the run is made in full.
        Case{"uneven_across_leaves", "--platform dgx-h100 --nodes 24 --set network.oversubscription=4 --tp 8 "
                                     "--pp 2 --dp 12 --global-batch 24 --hidden 1536 --heads 16" + kSmall, Replay::InFull}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// 32,768 GPUs (4,096 DGX H100, 24 layers): GPUs part from GPUs that parted in turn while a call
// among their node's GPUs, which the GPU they replayed made for them, was in flight. Each of
// those calls completes where it is made for a GPU as where it is made on its own: on every GPU
// that parted from it meanwhile too (CommandProcessor::made_calls_done). Before, GPUs two
// partings down waited for it forever and the run was made again in full (some hours: here it
// stops at --max-wall-s). Too large to run in full here: the replay must hold to the end.
TEST(SymmetryAtScale, GpusThatPartFromPartedGpusCompleteTheCallsMadeForThem) {
  const std::string report = cli_testing::temp_dir() + "/symmetry-32k.json";
  const cli_testing::Result r = tessera(
      "run -q --fidelity flow --platform dgx-h100 --nodes 4096 --model llama3-70b --layers 24 --tp 8 --pp 8 "
      "--dp 512 --micro-batch 1 --global-batch 512 --max-wall-s 300 --report-detail summary --report " + report);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("drifted apart"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(cli_testing::read_file(report));
  EXPECT_GT(j["simulation"]["gpus_parted"].get<size_t>(), 0u);
  EXPECT_LT(j["simulation"]["gpus_parted"].get<size_t>() + j["simulation"]["gpus_simulated"].get<size_t>(), 1000u);
}

TEST(SymmetryOption, OnOrOff) {
  const cli_testing::Result r = tessera("run --symmetry maybe");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--symmetry: 'maybe' is not on or off"), std::string::npos) << r.err;
}

TEST(SymmetryOption, TheSummarySaysHowManyGpusRan) {
  const cli_testing::Result r =
      tessera("run --fidelity flow --platform dgx-a100 --nodes 2 --tp 1 --pp 1 --dp 16 --global-batch 32" + kSmall);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("symmetry              1 of 16 GPUs simulated"), std::string::npos) << r.out;
}

}  // namespace
