// Simulated bus bandwidth against nccl-tests measurements on one 8-GPU node: all-reduce within
// 25% below 1 MiB (latency-bound), 10% from 1 MiB, 5% from 64 MiB; DGX H100's all-gather,
// reduce-scatter and all-to-all within 7% from 32 MiB, and the all-to-all and sendrecv of 4 of
// its GPUs. The platforms use NVLink line rates and
// packet overheads, the engine NCCL's documented protocol costs (models/collectives/tuner.h);
// the few GPU terms measured on nccl-tests curves (micro-benchmark calibration) are cited in
// the GPU files: A100's from its all-reduce curve, Hopper's Simple handshake from its
// all-gather curve, so reduce-scatter and all-to-all check it on curves it was not taken from.
// Where the model misses a band, the sizes are listed below as known gaps with the reason, and
// the band is skipped after every other size in it has been checked; docs/collectives.md shows
// the curves.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "calibration/measured_curve.h"
#include "calibration/nccl_tests.h"
#include "models/collectives/tuner.h"
#include "platforms/platform_file.h"
#include "sc_main/collective_command.h"
#include "tests/support/child_process.h"

namespace tessera {
namespace {

struct KnownGap {
  uint64_t from, to;  // sizes, inclusive
  const char* reason;
};

struct Curve {
  const char* platform;
  const char* file;
  uint64_t min_bytes, max_bytes;
  std::vector<KnownGap> gaps;
  const char* op = "all_reduce";  // nccl-tests' name; the file's `op` column where it has one
  int nodes = 1;
  const char* dataset = "";  // the file's `dataset` column where it has one
  const char* algorithm = "auto";  // as the measurement forced it (NCCL_ALGO)
  int gpus = 8;  // GPUs of the node the measurement ran on
};

const Curve kH100{
    "dgx-h100", "nccl_allreduce_dgx_h100_8gpu.csv", 8, 16ull << 30,
    {{8ull << 20, 8ull << 20,
      "NVLS at 8 MiB, where NCCL's NVLS chunk grows from 16 to 32 KiB: simulated 65 us against 82 "
      "measured. The measured step from 4 to 8 MiB is the curve's slowest (149 GB/s of algorithm "
      "bandwidth against 179 from 2 to 4 MiB); the engine fills NVLS's pipeline with one chunk per "
      "channel, where NCCL's cost model (and this point) implies a whole loop of all channels"}}};
const Curve kA100{
    "dgx-a100", "nccl_allreduce_a100_8gpu.csv", 8, 4ull << 30,
    {{2ull << 20, 2ull << 20,
      "2 MiB (-11%): the measured step from 1 to 2 MiB moves 110 GB/s of bus bandwidth, more than "
      "LL's 87.7 (NCCL's llMaxBw for Ampere), so NCCL ran LL128 there; its measured time beyond "
      "LL128's rate is 35 us at 2 MiB against 45-54 us from 4 to 32 MiB and the 57 us of NCCL's "
      "latencies at A100's clock, which the engine's LL128 (77 us at 2 MiB, -28%) charges; the "
      "engine's LL (62 us) is the nearer, and NCCL's model chooses it there too"}}};

const char* const kH100Ops = "nccl_dgx_h100_8gpu_collectives.csv";
const Curve kH100AllGather{"dgx-h100", kH100Ops, 32ull << 20, 16ull << 30, {}, "all_gather"};
const Curve kH100ReduceScatter{"dgx-h100", kH100Ops, 32ull << 20, 16ull << 30, {}, "reduce_scatter"};
const Curve kH100AllToAll{
    "dgx-h100", kH100Ops, 32ull << 20, 16ull << 30,
    {{128ull << 20, 128ull << 20,
      "128 MiB (+7.4%): 7 peers on 4 channels each (NCCL's plan for 8 ranks), the measured curve "
      "holds at 290-315 GB/s from 128 to 512 MiB where the NVLinks give the model 311-336, until "
      "NCCL doubles the channels at 1 GiB (333 measured, 342 simulated); 4 GPUs of the same node "
      "and run (3 peers on 8 channels, nccl_dgx_h100_4gpu_p2p.csv) sit within 2.4% at every size, "
      "so the plan and the channels' rate hold; what slows 28 channels that each write to one of "
      "7 peers is not modelled (out-of-place 128 MiB measured 298.6: +4.3%)"}},
    "alltoall"};

// Point-to-point on 4 H100 of one node (nccl_dgx_h100_4gpu_p2p.csv): NCCL's grouped sends and
// receives on its channels per peer (Tuner::p2p_plan), each channel at the GPU's point-to-point
// rate, which was measured on the sendrecv curve's 32-128 MiB (8 channels) and is checked on its
// other sizes and on the all-to-all.
const char* const kH100P2p = "nccl_dgx_h100_4gpu_p2p.csv";
const Curve kH100FourAllToAll{"dgx-h100", kH100P2p, 32ull << 20, 16ull << 30, {}, "alltoall", 1, "", "auto", 4};
const Curve kH100FourSendRecv{
    "dgx-h100", kH100P2p, 32ull << 20, 16ull << 30,
    {{256ull << 20, 256ull << 20,
      "256 MiB (+9%): NCCL stripes the 256 MiB message over 16 channels there (32 MiB per channel "
      "would be more than 32 chunks of 512 KiB), which the measured curve shows as its jump from "
      "163 to 299 GB/s, but at 18.7 GB/s per channel where 8 channels moved 20.9 each (and 32, "
      "from 512 MiB, fill the links); what makes the 16 channels slower is not modelled"}},
    "sendrecv", 1, "", "auto", 4};

struct Band {
  const char* name;
  uint64_t from, below;
  double tolerance;
};
const Band kBands[] = {{"below 1 MiB", 0, 1ull << 20, 0.25},
                       {"1 MiB to 64 MiB", 1ull << 20, 64ull << 20, 0.10},
                       {"64 MiB and above", 64ull << 20, ~0ull, 0.05}};
const Band kFrom32MiB{"32 MiB and above", 32ull << 20, ~0ull, 0.07};

// Two nodes (nccl_allreduce_multinode.csv): H100 with 400G InfiniBand, Ring forced within 5% from
// 64 MiB and NCCL's default within 10% from 64 MiB; A100 with HDR within 10% from 16 MiB.
const char* const kTwoNodes = "nccl_allreduce_multinode.csv";
const Curve kH100TwoNodesRing{
    "dgx-h100", kTwoNodes, 64ull << 20, 8ull << 30,
    {{64ull << 20, 64ull << 20,
      "64 MiB (-6%): ring/LL128, whose channels wait for each step's flags at 120/128 of the "
      "links (no LL128 rate is measured on H100); the measured curve's mid sizes take 40-70 us "
      "beyond the links at every size from 8 to 128 MiB, which the waits give from 32 MiB"}},
    "all_reduce", 2, "h100-2n-ring", "ring"};
const Curve kH100TwoNodesDefault{
    "dgx-h100", kTwoNodes, 64ull << 20, 16ull << 30,
    {{64ull << 20, 256ull << 20,
      "64-256 MiB (+33%, +14%, +10%): the measured NVLS-tree calls take about 200 us beyond the curve's "
      "own rate at every size from 64 MiB to 8 GiB (time against size: 199 us at 64 MiB, 210 us "
      "at 8 GiB, where one DGX H100's NVLS curve has none); tessera's NVLS-tree pays NCCL's "
      "latencies (23 us in the node, 14 us per level of the tree) and fills its pipeline in "
      "NCCL's 128 KiB chunks, 40-90 us, and no measurement in the project isolates the rest (the "
      "network proxy's steps through the tree)"}},
    "all_reduce", 2, "h100-2n-default"};
const Curve kA100TwoNodes{
    "dgx-a100", kTwoNodes, 16ull << 20, 8ull << 30,
    {{16ull << 20, 256ull << 20,
      "16-256 MiB (+10% to +31%): the measured curve takes 40-150 us beyond the links at 16-64 MiB "
      "(LL128) and about 300 us from 128 MiB (Simple), more than NCCL's latencies and the engine's "
      "step waits give across the HDR network; no measurement in the project isolates what the "
      "network path adds per step (the proxy's RDMA writes and completions)"}},
    "all_reduce", 2, "a100-2n-hdr"};
const Band kTwoNodesFrom64MiB5{"64 MiB and above (Ring)", 64ull << 20, ~0ull, 0.05};
const Band kTwoNodesFrom64MiB10{"64 MiB and above", 64ull << 20, ~0ull, 0.10};
const Band kTwoNodesFrom16MiB10{"16 MiB and above", 16ull << 20, ~0ull, 0.10};

// Simulated busbw per size, one simulation per curve (cached for the process's tests).
const std::map<uint64_t, double>& simulated(const Curve& c) {
  static std::map<std::string, std::map<uint64_t, double>> cache;
  auto& out = cache[std::string(c.platform) + "/" + c.op + "/" + c.dataset + "/" + std::to_string(c.gpus)];
  if (!out.empty()) return out;
  const nlohmann::json rows = testing::run_in_child([&] {
    app::SweepSettings s;
    s.op = c.op;
    s.min_bytes = c.min_bytes;
    s.max_bytes = c.max_bytes;
    if (!models::parse_algorithm(c.algorithm, s.options.collectives.algorithm))
      throw std::invalid_argument(c.algorithm);
    nlohmann::json j = nlohmann::json::array();
    const platforms::PlatformConfig platform = platforms::load_platform(
        c.platform, {"nodes=" + std::to_string(c.nodes), "node.gpus=" + std::to_string(c.gpus)});
    for (const app::SweepRow& r : app::run_sweep(platform, s))
      j.push_back({r.size_bytes, r.busbw_gbps});
    return j;
  });
  if (rows.is_object()) throw std::runtime_error(rows.dump());
  for (const auto& r : rows) out[r[0].get<uint64_t>()] = r[1].get<double>();
  return out;
}

void check_band(const Curve& c, const Band& band) {
  const auto measured = calibration::read_measured_curve(
      std::string(TESSERA_VALIDATION_DATA) + "/" + c.file,
      calibration::bus_bandwidth_factor(calibration::op_key(c.op), c.gpus * c.nodes), {c.op, c.dataset});
  const auto& sim = simulated(c);
  std::ostringstream gaps;
  int checked = 0;
  for (const auto& p : measured.points) {
    if (p.size_bytes < band.from || p.size_bytes >= band.below) continue;
    ASSERT_TRUE(sim.count(p.size_bytes)) << "no simulated row for " << p.size_bytes;
    const double s = sim.at(p.size_bytes);
    const double error = (s - p.busbw_gbps) / p.busbw_gbps;
    const bool ok = std::fabs(error) <= band.tolerance;
    const KnownGap* gap = nullptr;
    for (const KnownGap& g : c.gaps)
      if (p.size_bytes >= g.from && p.size_bytes <= g.to) gap = &g;
    std::printf("  %-9s %12llu B  simulated %8.2f  measured %8.2f GB/s  %+6.1f%%%s\n", c.platform,
                (unsigned long long)p.size_bytes, s, p.busbw_gbps, 100 * error,
                ok ? "" : gap ? "  (known gap)" : "  OUT OF TOLERANCE");
    if (ok) {
      ++checked;
      continue;
    }
    if (gap == nullptr) {
      ADD_FAILURE() << c.platform << " " << p.size_bytes << " B: simulated " << s << " GB/s vs measured "
                    << p.busbw_gbps << " (" << 100 * error << "%, tolerance " << 100 * band.tolerance << "%)";
      continue;
    }
    gaps << " " << p.size_bytes << " B (" << std::showpos << std::lround(100 * error) << std::noshowpos << "%)";
    if (gaps.str().find(gap->reason) == std::string::npos) gaps << ": " << gap->reason << ";";
  }
  if (!gaps.str().empty())
    GTEST_SKIP() << "known gaps in " << band.name << " (" << checked << " sizes within "
                 << 100 * band.tolerance << "%):" << gaps.str();
}

TEST(NcclAllReduceDgxH100, Below1MiBWithin25Percent) { check_band(kH100, kBands[0]); }
TEST(NcclAllReduceDgxH100, From1MiBWithin10Percent) { check_band(kH100, kBands[1]); }
TEST(NcclAllReduceDgxH100, From64MiBWithin5Percent) { check_band(kH100, kBands[2]); }
TEST(NcclAllReduceA100, Below1MiBWithin25Percent) { check_band(kA100, kBands[0]); }
TEST(NcclAllReduceA100, From1MiBWithin10Percent) { check_band(kA100, kBands[1]); }
TEST(NcclAllReduceA100, From64MiBWithin5Percent) { check_band(kA100, kBands[2]); }
TEST(NcclDgxH100, AllGatherFrom32MiBWithin7Percent) { check_band(kH100AllGather, kFrom32MiB); }
TEST(NcclDgxH100, ReduceScatterFrom32MiBWithin7Percent) { check_band(kH100ReduceScatter, kFrom32MiB); }
TEST(NcclDgxH100, AllToAllFrom32MiBWithin7Percent) { check_band(kH100AllToAll, kFrom32MiB); }
TEST(NcclDgxH100FourGpus, AllToAllFrom32MiBWithin7Percent) { check_band(kH100FourAllToAll, kFrom32MiB); }
TEST(NcclDgxH100FourGpus, SendRecvFrom32MiBWithin7Percent) { check_band(kH100FourSendRecv, kFrom32MiB); }
TEST(NcclTwoNodes, H100RingFrom64MiBWithin5Percent) { check_band(kH100TwoNodesRing, kTwoNodesFrom64MiB5); }
TEST(NcclTwoNodes, H100DefaultFrom64MiBWithin10Percent) { check_band(kH100TwoNodesDefault, kTwoNodesFrom64MiB10); }
TEST(NcclTwoNodes, A100HdrFrom16MiBWithin10Percent) { check_band(kA100TwoNodes, kTwoNodesFrom16MiB10); }

}  // namespace
}  // namespace tessera
