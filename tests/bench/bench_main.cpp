// make bench: simulator speed on fixed scenarios. Each scenario runs in its own child process
// (SystemC elaborates once per process) and prints wall time, simulated fabric transactions
// (one chunk across one link) and transactions per wall-clock second.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

#include <sys/resource.h>

#include <chrono>
#include <memory>

#include "tests/support/child_process.h"
#include "tests/support/jobs.h"
#include "platforms/platform_file.h"

namespace {

using tessera::testing::run_in_child;

void ring_allreduce(int gpus, uint64_t bytes, uint64_t chunk_bytes) {
  const nlohmann::json r = run_in_child([&] {
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

long peak_rss_mib() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Generating, routing and instantiating a dgx-h100 rail-optimized fat tree of `nodes` nodes
// (every GPU runs one tiny kernel, so the command processors have a program).
void build_cluster(int nodes) {
  const nlohmann::json r = run_in_child([&] {
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
    const tessera::platforms::PlatformGraph graph = tessera::platforms::generate_topology(p);
    const tessera::platforms::Routing routing(graph);
    const double route_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Kept until the process ends, as simulate() does (teardown is quadratic in SystemC 2.3).
    auto& pool = *new tessera::protocol::PayloadPool;
    auto& platform = *new tessera::platforms::Platform("platform", p, job, pool, tessera::models::CollectiveEngineConfig{});
    const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return nlohmann::json{{"route_s", route_s}, {"build_s", build_s}, {"rss_mib", peak_rss_mib()},
                          {"links", platform.links().size()}, {"switches", platform.switches().size()}};
  });
  if (r.contains("error")) {
    std::printf("error: %s\n", r["error"].get<std::string>().c_str());
    std::exit(1);
  }
  std::printf("dgx-h100 rail-optimized fat tree, %d nodes (%d GPUs): topology and routes %.2f s, "
              "with SystemC modules %.2f s (%zu switching modules, %zu one-way links), peak RSS %ld MiB\n",
              nodes, nodes * 8, r["route_s"].get<double>(), r["build_s"].get<double>(),
              r["switches"].get<size_t>(), r["links"].get<size_t>(), r["rss_mib"].get<long>());
}

}  // namespace

int sc_main(int, char*[]) { return 0; }

int main() {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  std::printf("tessera benchmark (packet mode, one core)\n");
  ring_allreduce(8, 1ull << 30, 128 * 1024);
  ring_allreduce(8, 1ull << 30, 16 * 1024);
  build_cluster(2048);
  return 0;
}
