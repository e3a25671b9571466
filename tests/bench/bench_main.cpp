// make bench: simulator speed on fixed scenarios. Each scenario runs in its own child process
// (SystemC elaborates once per process) and prints wall time, simulated fabric transactions
// (one chunk across one link) and transactions per wall-clock second.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include <sys/resource.h>

#include "models/rtl/registry.h"
#include "platforms/platform_file.h"
#include "sc_main/cli.h"
#include "sc_main/collective_command.h"
#include "sc_main/platform_options.h"
#include "tests/support/child_process.h"
#include "tests/support/flow_scenario.h"
#include "tests/support/jobs.h"

namespace {

// Runs one scenario in a child process; a scenario that fails ends the benchmark.
nlohmann::json scenario(const std::function<nlohmann::json()>& body) {
  const nlohmann::json r = tessera::testing::run_in_child(body);
  if (r.contains("error")) {
    std::printf("error: %s\n", r["error"].get<std::string>().c_str());
    std::exit(1);
  }
  return r;
}

void ring_allreduce(int gpus, uint64_t bytes, uint64_t chunk_bytes) {
  const nlohmann::json r = scenario([&] {
    tessera::platforms::PlatformConfig p = tessera::platforms::load_platform("dgx-h100");
    p.node.gpus = gpus;
    tessera::app::SimulationOptions o;
    o.chunk_bytes = chunk_bytes;
    const auto job = tessera::testing::one_collective(gpus, tessera::workloads::CollectiveKind::AllReduce, bytes);
    const auto result = tessera::app::simulate(p, job, o);
    return nlohmann::json{{"wall_s", result.wall_s},
                          {"transactions", result.transactions},
                          {"simulated_s", result.iteration_time_s},
                          {"payloads", result.payloads_created}};
  });
  const double wall = r["wall_s"], tx = r["transactions"];
  std::printf("ring all-reduce %4.1f GiB on %d GPUs, %6llu KiB chunks: wall %.3f s, %.0f transactions, "
              "%.2f M transactions/s, simulated %.3f ms, busbw %.1f GB/s\n",
              double(bytes) / (1u << 30), gpus, (unsigned long long)(chunk_bytes / 1024), wall, tx,
              tx / wall / 1e6, r["simulated_s"].get<double>() * 1e3,
              2.0 * (gpus - 1) / gpus * double(bytes) / r["simulated_s"].get<double>() / 1e9);
}

long peak_rss_mib() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// One all-reduce of `bytes` with `algorithm` on `nodes` nodes of `platform`, built and run by
// the same code as `tessera collective --platform P --nodes N --algorithm A -b S -e S
// --fidelity F`; the wall time and peak RSS cover building the platform and its routes.
void collective_allreduce(const std::string& platform, int nodes, const std::string& algorithm,
                          uint64_t bytes, tessera::platforms::Fidelity fidelity = tessera::platforms::Fidelity::Packet) {
  const nlohmann::json r = scenario([&] {
    const auto start = std::chrono::steady_clock::now();
    tessera::protocol::set_time_resolution();  // before the platform makes an sc_time
    tessera::app::PlatformSettings settings;
    settings.platform = platform;
    settings.nodes = nodes;
    tessera::app::SweepSettings sweep;
    sweep.op = "allreduce";
    sweep.min_bytes = sweep.max_bytes = bytes;
    sweep.options.fidelity = fidelity;
    if (!tessera::models::parse_algorithm(algorithm, sweep.options.collectives.algorithm))
      throw std::invalid_argument("unknown algorithm " + algorithm);
    tessera::app::SimulationResult result;
    const auto rows = tessera::app::run_sweep(tessera::app::build_platform(settings), sweep, &result);
    return nlohmann::json{{"wall_s", result.wall_s},
                          {"command_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
                          {"rss_mib", peak_rss_mib()},
                          {"transactions", result.transactions},
                          {"simulated_s", result.iteration_time_s},
                          {"busbw_gbps", rows.at(0).busbw_gbps},
                          {"choice", rows.at(0).algorithm + "/" + rows.at(0).protocol + "/" +
                                         std::to_string(rows.at(0).channels)}};
  });
  const double wall = r["wall_s"], tx = r["transactions"];
  const bool flow = fidelity == tessera::platforms::Fidelity::Flow;
  std::printf("%s all-reduce %4.1f GiB on %d nodes of %s (%d GPUs), %s%s: wall %.3f s", algorithm.c_str(),
              double(bytes) / (1u << 30), nodes, platform.c_str(), nodes * 8, flow ? "flow fidelity, " : "",
              r["choice"].get<std::string>().c_str(), wall);
  if (flow)  // flow fidelity sends flows, not transactions: what the platform costs instead
    std::printf(" (%.3f s with the platform and routes), peak RSS %ld MiB", r["command_s"].get<double>(),
                r["rss_mib"].get<long>());
  else
    std::printf(", %.0f transactions, %.2f M transactions/s", tx, tx / wall / 1e6);
  std::printf(", simulated %.3f ms, busbw %.1f GB/s\n", r["simulated_s"].get<double>() * 1e3,
              r["busbw_gbps"].get<double>());
}

// Generating, routing and instantiating a dgx-h100 rail-optimized fat tree of `nodes` nodes
// (every GPU runs one tiny kernel, so the command processors have a program).
void build_cluster(int nodes) {
  const nlohmann::json r = scenario([&] {
    tessera::platforms::PlatformConfig p = tessera::platforms::load_platform("dgx-h100");
    p.nodes = nodes;
    tessera::workloads::Job job;
    auto program = std::make_shared<tessera::workloads::Program>();
    tessera::workloads::Op op;
    op.kind = tessera::workloads::OpKind::Compute;
    op.flops = 1e6;
    program->ops.push_back(op);
    for (int r = 0; r < p.gpu_count(); ++r) job.ranks.push_back({r, program, {}, {}});
    const auto start = std::chrono::steady_clock::now();
    auto routed = std::make_shared<const tessera::platforms::RoutedTopology>(p);
    const double route_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Kept until the process ends, as simulate() does (teardown is quadratic in SystemC 2.3).
    auto& pool = *new tessera::protocol::PayloadPool;
    auto& platform = *new tessera::platforms::Platform("platform", p, job, pool, tessera::models::CollectiveEngineConfig{},
                                                        tessera::platforms::Fidelity::Packet, routed);
    const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return nlohmann::json{{"route_s", route_s}, {"build_s", build_s}, {"rss_mib", peak_rss_mib()},
                          {"links", platform.links().size()}, {"switches", platform.switches().size()}};
  });
  std::printf("dgx-h100 rail-optimized fat tree, %d nodes (%d GPUs): topology and routes %.2f s, "
              "with SystemC modules %.2f s (%zu switching modules, %zu one-way links), peak RSS %ld MiB\n",
              nodes, nodes * 8, r["route_s"].get<double>(), r["build_s"].get<double>(),
              r["switches"].get<size_t>(), r["links"].get<size_t>(), r["rss_mib"].get<long>());
}

// Flow mode: `flows` transfers of 1 to 4 MiB between 64 endpoints of a two-tier leaf-spine
// network (8 leaves of 8 endpoints, 8 spines): tier 1 is 64 endpoint links, tier 2 64
// leaf-spine links, each direction 50 GB/s, so 256 directed links. A transfer between leaves
// crosses four links (spine by a hash of its ends), within a leaf two. Transfer i starts at
// i * `stagger_ns`, so flows start and end all along and most of them are active together.
void flow_fabric(uint32_t flows, double stagger_ns) {
  const nlohmann::json r = scenario([&] {
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
  const double wall = r["wall_s"], events = r["events"], updates = r["updates"];
  std::printf("flow fabric, %u flows on a 2-tier leaf-spine (256 links), one every %.0f ns: wall %.3f s, "
              "%.0f flow events, %.0f flow events/s, %.0f rate updates (%.0f flow-hops each), "
              "simulated %.3f ms\n",
              flows, stagger_ns, wall, events, events / wall, updates,
              r["hops"].get<double>() / updates, r["simulated_s"].get<double>() * 1e3);
}

// The default run (GPT-3 1.3B, data parallel on one DGX H100 node) as `tessera run` makes it,
// with the NVSwitch ports' C++ arbiters, then with rr_arbiter verilated at each of them
// (`tessera run --rtl-arbiter nvswitch`; docs/cosim.md).
void one_node_iteration(bool rtl) {
  const nlohmann::json r = scenario([&] {
    char report[] = "/tmp/tessera-bench-XXXXXX";
    const int fd = mkstemp(report);
    if (fd >= 0) close(fd);
    std::vector<const char*> argv = {"tessera", "run", "-q", "--report", report};
    if (rtl) argv.insert(argv.end(), {"--rtl-arbiter", "nvswitch", "--rtl-reference", "false"});
    std::ostringstream out, err;
    const auto start = std::chrono::steady_clock::now();
    const int status = tessera::app::run_cli(int(argv.size()), argv.data(), out, err);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ifstream in(report);
    nlohmann::json j = status == 0 ? nlohmann::json::parse(in) : nlohmann::json{{"error", err.str()}};
    std::remove(report);
    if (status != 0) throw std::runtime_error(err.str());
    j["wall_s"] = wall;  // building the job and the platform included
    return j;
  });
  const double wall = r["wall_s"];
  std::printf("gpt3-1.3b iteration on one dgx-h100 node, %s: wall %.3f s, iteration %.3f ms, %.0f transactions",
              rtl ? "rr_arbiter on the 8 NVSwitch ports" : "C++ arbiters", wall,
              r["iteration_time_s"].get<double>() * 1e3, r["simulation"]["fabric_transactions"].get<double>());
  if (rtl) std::printf(", %.0f RTL cycles, %.0f RTL cycles/s of simulation", r["rtl"]["cycles"].get<double>(),
                       r["rtl"]["cycles_per_wall_s"].get<double>());
  std::printf("\n");
}

}  // namespace

int sc_main(int, char*[]) { return 0; }

// With an argument, only the scenarios whose group ("packet", "hierarchical", "build", "rtl" or
// "flow") it names.
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  const std::string only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "packet") {
    std::printf("tessera benchmark (packet mode, one core)\n");
    ring_allreduce(8, 1ull << 30, 128 * 1024);
    ring_allreduce(8, 1ull << 30, 16 * 1024);
  }
  if (only.empty() || only == "hierarchical") {
    std::printf("tessera benchmark (packet mode, multi-node, one core)\n");
    collective_allreduce("dgx-h100", 8, "hierarchical", 1ull << 30);
  }
  if (only.empty() || only == "build") build_cluster(2048);
  if (only.empty() || only == "rtl") {
    std::printf("tessera benchmark (RTL co-simulation, one core)\n");
    one_node_iteration(false);
    if (tessera::rtl::built()) one_node_iteration(true);
    else std::printf("RTL co-simulation not built: install Debian package verilator and reconfigure\n");
  }
  if (only.empty() || only == "flow") {
    std::printf("tessera benchmark (flow mode, one core)\n");
    flow_fabric(4096, 100);
    collective_allreduce("dgx-h100", 512, "auto", 1ull << 30, tessera::platforms::Fidelity::Flow);
  }
  return 0;
}
