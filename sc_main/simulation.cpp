#include "sc_main/simulation.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "analytic/iteration.h"
#include "models/collectives/tuner.h"
#include "models/gpu/program_graph.h"
#include "models/rtl/contract.h"
#include "sc_main/huge_pages.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "sc_main/progress_line.h"
#include "sc_main/symmetric_run.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"
#include "tlm/time_span.h"
#include "workloads/replicas.h"

namespace tessera::app {
namespace {

double seconds(const sc_core::sc_time& t) { return t.to_seconds(); }

void check_program_choices(const workloads::Job& job, const workloads::Program& program, std::vector<bool>& seen);

// Per-op algorithm names must be known before the run, not fail inside it.
void check_collective_choices(const workloads::Job& job) {
  std::vector<bool> seen(job.names.size(), false);
  std::set<const workloads::Program*> programs;  // ranks share programs: each once
  for (const workloads::Rank& rank : job.ranks)
    if (programs.insert(rank.program.get()).second) check_program_choices(job, *rank.program, seen);
}

void check_program_choices(const workloads::Job& job, const workloads::Program& program, std::vector<bool>& seen) {
  for (const workloads::Op& op : program.ops) {
    if (op.kind != workloads::OpKind::Collective || op.algorithm == 0 || seen[op.algorithm]) continue;
    seen[op.algorithm] = true;
    models::CollectiveAlgorithm a;
    models::CollectiveProtocol p;
    models::op_algorithm_choice(job, op, a, p);
  }
}

// CPU time of the process, all its threads (what a run costs, whatever else the machine runs;
// the analytic model builds the programs' graphs on every core).
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Times over `iterations` iterations as the mean of one.
void per_iteration(SimulationResult& r, uint64_t iterations) {
  r.iterations = iterations;
  const double n = double(iterations);
  r.iteration_time_s /= n;
  for (RankResult& rank : r.ranks) {
    for (double* t : {&rank.finish_s, &rank.compute_s, &rank.exposed_communication_s,
                      &rank.overlapped_communication_s, &rank.idle_s})
      *t /= n;
    for (double& t : rank.compute_by_cause) t /= n;
    for (double& t : rank.time_by_cause) t /= n;
  }
  for (LinkResult& link : r.links) link.busy_s /= n;
}

// The --vcd waveform: SystemC writes NAME.vcd as the run goes, in the temporary folder; it is put
// in place as a whole once closed.
class Waveform {
 public:
  Waveform(const std::string& path, const platforms::Platform& platform) : path_(path) {
    if (path.empty()) return;
    if (platform.rtl_ports().empty())
      throw std::invalid_argument("--vcd: the run has no RTL block to trace (--rtl-arbiter, docs/cosim.md)");
    char stem[] = "/tmp/tessera-vcd-XXXXXX";
    const int fd = ::mkstemp(stem);
    if (fd < 0) throw OutputError(path + ": cannot write (no temporary file)");
    ::close(fd);
    stem_ = stem;  // the placeholder keeps the name; SystemC writes STEM.vcd
    file_ = sc_core::sc_create_vcd_trace_file(stem_.c_str());
    file_->set_time_unit(1, sc_core::SC_PS);
    for (const auto& port : platform.rtl_ports()) port->trace_signals(file_);
  }
  // Closes the file and puts it in place.
  void finish() {
    if (file_ == nullptr) return;
    sc_core::sc_close_vcd_trace_file(file_);
    file_ = nullptr;
    const std::string written = stem_ + ".vcd";
    write_output_with(path_, [&](const std::string& temporary) {
      std::filesystem::copy_file(written, temporary, std::filesystem::copy_options::overwrite_existing);
    });
    std::filesystem::remove(written);
    std::filesystem::remove(stem_);
  }
  ~Waveform() {
    if (file_ == nullptr) return;
    std::error_code ec;
    std::filesystem::remove(stem_ + ".vcd", ec);
    std::filesystem::remove(stem_, ec);
  }

 private:
  std::string path_, stem_;
  sc_core::sc_trace_file* file_ = nullptr;
};

RankResult rank_result(models::Gpu& gpu, int rank, sc_core::sc_time end) {
  gpu.activity().close(end);
  RankResult rr;
  rr.rank = rank;
  rr.finish_s = seconds(gpu.command_processor().finish_time());
  rr.compute_s = seconds(gpu.activity().compute());
  rr.exposed_communication_s = seconds(gpu.activity().exposed_communication());
  rr.overlapped_communication_s = seconds(gpu.activity().overlapped_communication());
  rr.idle_s = seconds(gpu.activity().idle());
  rr.compute_by_cause = gpu.activity().compute_by_cause();
  rr.time_by_cause = gpu.activity().causes().seconds();
  rr.cause_spans = gpu.activity().causes().spans();
  rr.ops = gpu.command_processor().completed_ops();
  rr.bytes_sent = gpu.collectives().bytes_injected();
  rr.bytes_received = gpu.collectives().bytes_received();
  rr.spans = gpu.activity().spans();
  return rr;
}

}  // namespace

SimulationResult simulate(const platforms::PlatformConfig& config, const workloads::Job& job,
                          const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  protocol::set_time_resolution();
  workloads::validate(job);

  // The SystemC kernel elaborates once per process, and tearing a large hierarchy down costs
  // time quadratic in its ports (SystemC 2.3 unregisters each from a flat list): the pool and
  // the platform live until the process ends.
  protocol::PayloadPool& pool = *new protocol::PayloadPool;
  models::CollectiveEngineConfig collectives = options.collectives;
  collectives.chunk_bytes = options.chunk_bytes;
  check_collective_choices(job);
  platforms::Platform* built = nullptr;
  try {
    built = new platforms::Platform("platform", config, job, pool, collectives, options.fidelity, options.topology);
  } catch (const platforms::PlatformError& e) {  // what the run's options ask of the platform
    throw platform_value_error(config, e);
  }
  platforms::Platform& platform = *built;

  // Symmetry: replica groups' GPUs replay their representatives' communication.
  workloads::Replicas replicas;
  // Flow fidelity only: packet fidelity's switches serve a collective's members in an order of
  // their own, so members finish a call apart (by arbitration) and a replay would not be exact.
  if (options.symmetry && options.fidelity == platforms::Fidelity::Flow && platform.rtl_ports().empty())
    replicas = workloads::find_replicas(job);
  const bool symmetric = replicas.any();

  // One dependency graph per distinct program.
  std::map<const workloads::Program*, std::shared_ptr<const models::ProgramGraph>> graphs;
  uint64_t total_ops = 0;
  for (const workloads::Rank& rank : job.ranks) {
    auto& graph = graphs[rank.program.get()];
    if (!graph) graph = std::make_shared<models::ProgramGraph>(*rank.program);
    if (!symmetric || replicas.representative[size_t(rank.rank)] == rank.rank)
      total_ops += rank.program->ops.size() * options.iterations;
  }
  TerminalProgress progress(total_ops, options.iterations, options.progress && isatty(STDERR_FILENO));
  std::unique_ptr<SymmetricRun> symmetry;
  if (symmetric) symmetry = std::make_unique<SymmetricRun>(platform, job, std::move(replicas));
  for (const workloads::Rank& rank : job.ranks) {
    models::Gpu& gpu = platform.gpu(rank.rank);
    if (options.trace) gpu.activity().enable_spans();
    gpu.set_kernel_timer(options.kernel_timer.get());
    gpu.command_processor().load(job, rank, graphs[rank.program.get()], &progress, options.iterations);
  }
  const sc_core::sc_time bucket(options.trace_bucket_us, sc_core::SC_US);
  if (options.trace)  // (flow fidelity keeps no per-bucket link activity)
    for (const auto& link : platform.links()) link->record_activity(bucket);

  Waveform waveform(options.vcd, platform);
  if (options.inspect) options.inspect(platform);

  try {
    sc_core::sc_start();
  } catch (const sc_core::sc_report&) {
    protocol::rethrow_time_span_error();  // a number beyond the time span: bad input
    try {
      rtl::rethrow_contract_error();
    } catch (const rtl::ContractError&) {
      waveform.finish();  // up to the cycle the block broke its contract
      throw;
    }
    throw;
  }
  waveform.finish();
  if (symmetry) symmetry->check();

  SimulationResult result;
  result.fidelity = options.fidelity;
  result.fidelity_reason = options.fidelity_reason;
  if (symmetry) {
    result.gpus_simulated = symmetry->replicas().simulated;
    result.gpus_parted = symmetry->parted();
    result.gpus_followed_parted = symmetry->followed_parted();
    result.symmetry_skew_s = symmetry->skew_s();
    result.quiet_nodes = symmetry->quiet_nodes();
    result.echo_nodes = symmetry->echo_nodes();
    result.rail_images = symmetry->rail_images();
  }
  sc_core::sc_time end = sc_core::SC_ZERO_TIME;
  for (size_t r = 0; r < platform.gpu_count(); ++r) {
    const models::CommandProcessor& cp = platform.gpu(r).command_processor();
    if (cp.follower()) continue;
    end = std::max(end, cp.finished() ? cp.finish_time() : sc_core::sc_time_stamp());
  }
  result.iteration_time_s = seconds(end);
  result.ranks.resize(platform.gpu_count());
  for (size_t r = 0; r < platform.gpu_count(); ++r)
    if (!platform.gpu(r).command_processor().follower())
      result.ranks[r] = rank_result(platform.gpu(r), static_cast<int>(r), end);
  for (size_t r = 0; r < platform.gpu_count(); ++r) {
    if (!platform.gpu(r).command_processor().follower()) continue;
    // What its representative did; the bytes its own collective engine moved.
    RankResult& rr = result.ranks[r];
    rr = result.ranks[size_t(symmetry->leader(int(r)))];
    rr.rank = static_cast<int>(r);
    if (symmetry->echoing(r)) continue;  // its calls in the node were its representative's echoes: its bytes too
    rr.bytes_sent = platform.gpu(r).collectives().bytes_injected();
    rr.bytes_received = platform.gpu(r).collectives().bytes_received();
    if (const models::FlowFabric* fabric = platform.flow_fabric()) {  // its calls across the network: rail images
      rr.bytes_sent += fabric->image_bytes_sent(uint32_t(r));
      rr.bytes_received += fabric->image_bytes_received(uint32_t(r));
    }
  }
  for (size_t r = 0; symmetry != nullptr && r < platform.gpu_count(); ++r) {
    // A quiet node's calls among its GPUs: its mirror's bytes (docs/fidelity.md, "Quiet nodes");
    // an echo node's follower: its leader's (that of a quiet node that parted echoing).
    const auto [sent, received] = symmetry->left_out_bytes(symmetry->echoing(r) ? size_t(symmetry->leader(int(r))) : r);
    result.ranks[r].bytes_sent += sent;
    result.ranks[r].bytes_received += received;
  }
  for (const auto& link : platform.links()) {
    LinkResult lr;
    lr.name = link->name();
    lr.kind = link->link_kind();
    lr.bandwidth_bytes_per_s = link->timing().bandwidth_bytes_per_s;
    lr.bytes = link->bytes_carried();
    lr.chunks = link->chunks_carried();
    lr.busy_s = seconds(link->busy_time());
    lr.activity = link->activity();
    result.transactions += lr.chunks;
    result.links.push_back(std::move(lr));
  }
  if (const models::FlowFabric* fabric = platform.flow_fabric()) {
    const platforms::RoutedPaths& paths = *platform.flow_paths();
    const size_t first = result.links.size();
    result.links.reserve(first + fabric->links());
    for (uint32_t id = 0; id < fabric->links(); ++id) {
      LinkResult lr;
      lr.name = paths.name(id);
      lr.kind = platforms::link_kind_name(paths.kind(id));
      lr.bandwidth_bytes_per_s = fabric->link(id).timing.bandwidth_bytes_per_s;
      lr.bytes = fabric->bytes_carried(id);
      lr.chunks = fabric->chunks_carried(id);
      lr.busy_s = seconds(fabric->busy_time(id));
      result.transactions += lr.chunks;
      result.links.push_back(std::move(lr));
    }
    if (symmetry) symmetry->mirror_quiet_links(result.links, first);
    result.flows = fabric->flows_started();
    result.links_never_filling = fabric->links_never_filling();
  }
  result.payloads_created = pool.created();
  result.simulated_s = seconds(sc_core::sc_time_stamp());
  for (const auto& port : platform.rtl_ports()) {
    RtlPortResult p;
    p.port = port->port().name();
    p.block = port->block_name();
    p.kind = port->block_kind();
    p.period_s = seconds(port->period());
    p.cycles = port->cycles();
    p.decisions = port->decisions();
    result.rtl.push_back(std::move(p));
  }

  // A program that could not finish: name the stuck ranks, their ops and who is missing.
  for (size_t r = 0; r < platform.gpu_count(); ++r) {
    const models::Gpu& gpu = platform.gpu(r);
    if (gpu.command_processor().finished() || gpu.command_processor().follower()) continue;
    result.deadlocked = true;
    const workloads::Program& program = *job.ranks[r].program;
    for (const models::CollectiveEngine::Waiting& w : gpu.collectives().waiting()) {
      StuckOp s;
      s.rank = static_cast<int>(r);
      s.op = w.op;
      s.name = job.op_name(program.ops[w.op]);
      s.what = w.what;
      if (w.communicator >= 0) {
        for (int member : job.communicators[w.communicator].ranks)
          if (!platform.gpu(member).collectives().joined(w.communicator, w.sequence))
            s.absent_ranks.push_back(member);
      } else if (w.peer >= 0) {
        s.absent_ranks.push_back(w.peer);
      }
      result.stuck.push_back(std::move(s));
    }
    if (result.stuck.empty() || result.stuck.back().rank != static_cast<int>(r)) {
      // Nothing in flight in the collective engine: report the first op that never issued.
      for (int64_t op : gpu.command_processor().first_blocked_per_stream()) {
        if (op < 0) continue;
        StuckOp s;
        s.rank = static_cast<int>(r);
        s.op = static_cast<uint32_t>(op);
        s.name = job.op_name(program.ops[op]);
        s.what = "never issued: it waits for ops that cannot complete";
        result.stuck.push_back(std::move(s));
        break;
      }
    }
  }
  if (result.deadlocked)
    for (const auto& device : platform.switches())
      for (unsigned p = 0; p < device->ports(); ++p) result.chunks_held_in_switches += device->ingress(p).occupied();
  per_iteration(result, options.iterations);
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  result.huge_pages = allocator_asks_for_huge_pages();
  return result;
}

SimulationResult cost_analytically(const platforms::PlatformConfig& platform,
                                   const platforms::RoutedTopology& topology,
                                   const workloads::Job& job, const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  // (the caller has validated the job; the costs check each op's own collective algorithm)
  analytic::AnalyticOptions a;
  a.costs.kernel_timer = options.kernel_timer;
  a.costs.collectives = options.collectives;
  a.costs.collectives.chunk_bytes = options.chunk_bytes;
  a.trace = options.trace;
  analytic::AnalyticResult r = analytic::cost_iteration(platform, topology, job, a);
  SimulationResult result;
  result.fidelity = platforms::Fidelity::Analytic;
  result.iteration_time_s = r.iteration_time_s;
  result.ranks.reserve(r.ranks.size());
  for (analytic::RankCost& c : r.ranks) {
    RankResult rr;
    rr.rank = c.rank;
    rr.finish_s = c.finish_s;
    rr.compute_s = c.compute_s;
    rr.exposed_communication_s = c.exposed_communication_s;
    rr.overlapped_communication_s = c.overlapped_communication_s;
    rr.idle_s = c.idle_s;
    rr.compute_by_cause = c.compute_by_cause;
    rr.time_by_cause = c.time_by_cause;
    rr.cause_spans = std::move(c.cause_spans);
    rr.ops = c.ops;
    rr.bytes_sent = static_cast<uint64_t>(c.bytes_sent);
    rr.bytes_received = static_cast<uint64_t>(c.bytes_received);
    rr.spans = std::move(c.spans);
    result.ranks.push_back(std::move(rr));
  }
  result.classes = r.classes;
  if (r.deadlocked) {
    result.deadlocked = true;
    StuckOp s;
    s.what = r.deadlock;
    result.stuck.push_back(std::move(s));
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  result.cpu_s = process_cpu_seconds() - cpu_start;
  return result;
}

std::string describe_deadlock(const SimulationResult& result) {
  if (result.fidelity == platforms::Fidelity::Analytic && !result.stuck.empty())
    return "the program cannot finish: " + result.stuck.front().what + ".";
  // The first few stuck ops and absent ranks by name, the rest counted: one line a person
  // reads, however many of 65,536 ranks are stuck.
  constexpr size_t kShown = 8;
  std::ostringstream out;
  out << "the program cannot finish:";
  if (result.chunks_held_in_switches > 0)
    out << " the fabric deadlocked, " << result.chunks_held_in_switches
        << " chunks held in switch buffers that wait for room in each other (routes with a cycle of"
           " buffers; docs/platforms.md, \"Deadlock-free routes\");";
  for (size_t k = 0; k < std::min(result.stuck.size(), kShown); ++k) {
    const StuckOp& s = result.stuck[k];
    out << " rank " << s.rank << " is stuck at op " << s.op << " '" << s.name << "' (" << s.what;
    if (!s.absent_ranks.empty()) {
      out << "; waiting for rank";
      if (s.absent_ranks.size() > 1) out << "s";
      for (size_t i = 0; i < std::min(s.absent_ranks.size(), kShown); ++i)
        out << (i ? "," : "") << " " << s.absent_ranks[i];
      if (s.absent_ranks.size() > kShown) out << " and " << s.absent_ranks.size() - kShown << " more";
      out << " that never joined";
    }
    out << ");";
  }
  if (result.stuck.size() > kShown) {
    std::vector<int> ranks;
    for (const StuckOp& s : result.stuck) ranks.push_back(s.rank);
    std::sort(ranks.begin(), ranks.end());
    const size_t distinct = size_t(std::unique(ranks.begin(), ranks.end()) - ranks.begin());
    out << " and " << result.stuck.size() - kShown << " more stuck ops (" << distinct << " ranks stuck in all);";
  }
  std::string text = out.str();
  if (!text.empty() && text.back() == ';') text.back() = '.';
  return text;
}

}  // namespace tessera::app
