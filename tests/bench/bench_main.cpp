// make bench: simulator speed on fixed scenarios. Each scenario runs in its own child process
// (SystemC elaborates once per process) and prints wall time, simulated fabric transactions
// (one chunk across one link) and transactions per wall-clock second.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <systemc>

#include "tests/support/child_process.h"
#include "tests/support/flow_scenario.h"
#include "tests/support/jobs.h"

namespace {

using tessera::testing::run_in_child;

void ring_allreduce(int gpus, uint64_t bytes, uint64_t chunk_bytes) {
  const nlohmann::json r = run_in_child([&] {
    tessera::platforms::PlatformConfig p = tessera::platforms::dgx_h100();
    p.gpus = gpus;
    tessera::app::SimulationOptions o;
    o.chunk_bytes = chunk_bytes;
    const auto job = tessera::testing::one_collective(gpus, tessera::workloads::CollectiveKind::AllReduce, bytes);
    const auto result = tessera::app::simulate(p, job, o);
    return nlohmann::json{{"wall_s", result.wall_s},
                          {"transactions", result.transactions},
                          {"simulated_s", result.iteration_time_s},
                          {"payloads", result.payloads_created}};
  });
  if (r.contains("error")) {
    std::printf("error: %s\n", r["error"].get<std::string>().c_str());
    std::exit(1);
  }
  const double wall = r["wall_s"], tx = r["transactions"];
  std::printf("ring all-reduce %4.1f GiB on %d GPUs, %6llu KiB chunks: wall %.3f s, %.0f transactions, "
              "%.2f M transactions/s, simulated %.3f ms, busbw %.1f GB/s\n",
              double(bytes) / (1u << 30), gpus, (unsigned long long)(chunk_bytes / 1024), wall, tx,
              tx / wall / 1e6, r["simulated_s"].get<double>() * 1e3,
              2.0 * (gpus - 1) / gpus * double(bytes) / r["simulated_s"].get<double>() / 1e9);
}

// Flow mode: `flows` transfers of 1 to 4 MiB between 64 endpoints of a two-tier leaf-spine
// network (8 leaves of 8 endpoints, 8 spines): tier 1 is 64 endpoint links, tier 2 64
// leaf-spine links, each direction 50 GB/s, so 256 directed links. A transfer between leaves
// crosses four links (spine by a hash of its ends), within a leaf two. Transfer i starts at
// i * `stagger_ns`, so flows start and end all along and most of them are active together.
void flow_fabric(uint32_t flows, double stagger_ns) {
  const nlohmann::json r = run_in_child([&] {
    tessera::protocol::set_time_resolution();
    const uint32_t endpoints = 64, leaves = 8, spines = 8, per_leaf = endpoints / leaves;
    const double bandwidth = 50e9;
    const sc_core::sc_time link_latency(500, sc_core::SC_NS), switch_latency(300, sc_core::SC_NS);
    tessera::testing::TablePaths paths(endpoints);
    std::vector<uint32_t> up(endpoints), down(endpoints), leaf_up(leaves * spines),
        spine_down(leaves * spines);
    for (uint32_t e = 0; e < endpoints; ++e) up[e] = paths.add_link(bandwidth, link_latency);
    for (uint32_t e = 0; e < endpoints; ++e)
      down[e] = paths.add_link(bandwidth, link_latency, switch_latency);
    for (uint32_t i = 0; i < leaves * spines; ++i)
      leaf_up[i] = paths.add_link(bandwidth, link_latency, switch_latency);
    for (uint32_t i = 0; i < leaves * spines; ++i)
      spine_down[i] = paths.add_link(bandwidth, link_latency, switch_latency);
    for (uint32_t s = 0; s < endpoints; ++s)
      for (uint32_t d = 0; d < endpoints; ++d) {
        const uint32_t ls = s / per_leaf, ld = d / per_leaf, spine = (s + d) % spines;
        if (ls == ld) paths.set_path(s, d, {up[s], down[d]});
        else paths.set_path(s, d, {up[s], leaf_up[ls * spines + spine],
                                   spine_down[spine * leaves + ld], down[d]});
      }
    std::vector<tessera::testing::Transfer> schedule;
    uint64_t x = 12345, bytes = 0;
    auto next = [&x](uint32_t n) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<uint32_t>((x >> 33) % n);
    };
    for (uint32_t i = 0; i < flows; ++i) {
      tessera::testing::Transfer t;
      t.start_s = i * stagger_ns * 1e-9;
      t.source = next(endpoints);
      t.destination = (t.source + 1 + next(endpoints - 1)) % endpoints;
      t.bytes = (1ull << 20) + next(3u << 20);
      bytes += t.bytes;
      schedule.push_back(t);
    }
    tessera::testing::FlowScenario scenario("scenario", paths, schedule, endpoints);
    const auto start = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const tessera::models::FlowFabric& f = scenario.fabric;
    if (scenario.bytes_delivered() != bytes) throw std::runtime_error("bytes lost");
    return nlohmann::json{{"wall_s", wall},
                          {"events", f.flows_started() + f.flows_finished()},
                          {"updates", f.rate_updates()},
                          {"hops", f.share().hops_visited()},
                          {"simulated_s", sc_core::sc_time_stamp().to_seconds()}};
  });
  if (r.contains("error")) {
    std::printf("error: %s\n", r["error"].get<std::string>().c_str());
    std::exit(1);
  }
  const double wall = r["wall_s"], events = r["events"], updates = r["updates"];
  std::printf("flow fabric, %u flows on a 2-tier leaf-spine (256 links), one every %.0f ns: wall %.3f s, "
              "%.0f flow events, %.0f flow events/s, %.0f rate updates (%.0f flow-hops each), "
              "simulated %.3f ms\n",
              flows, stagger_ns, wall, events, events / wall, updates,
              r["hops"].get<double>() / updates, r["simulated_s"].get<double>() * 1e3);
}

}  // namespace

int sc_main(int, char*[]) { return 0; }

// With an argument, only the scenarios whose group ("packet" or "flow") it names.
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  const std::string only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "packet") {
    std::printf("tessera benchmark (packet mode, one core)\n");
    ring_allreduce(8, 1ull << 30, 128 * 1024);
    ring_allreduce(8, 1ull << 30, 16 * 1024);
  }
  if (only.empty() || only == "flow") {
    std::printf("tessera benchmark (flow mode, one core)\n");
    flow_fabric(4096, 100);
  }
  return 0;
}
