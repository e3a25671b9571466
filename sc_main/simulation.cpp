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
#include "sc_main/output_file.h"
#include "sc_main/progress_line.h"
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

// Adds up, op by op, how far apart the followers' communication completed from their
// representatives' (the farthest follower of each op). A GPU's op completing s later in its own
// run would delay what follows it by at most s, so the sum bounds how far the replay is from
// the full run, to first order (rates shared on the fabric aside). At the end the sum must be
// within kSkewBudget of the simulated time; the run stops early once it passes kSkewLimit of
// the time so far (the first ops of a run may be a little apart while little time has passed).
class SymmetryWatch : public models::SymmetryMonitor {
 public:
  static constexpr double kSkewBudget = 1e-3, kSkewLimit = 1e-2;
  explicit SymmetryWatch(const workloads::Job& job) : job_(job) {}
  void skew(int representative, int follower, uint32_t op, double seconds) override {
    if (seconds <= 0 || !broken_.empty()) return;
    total_s_ += seconds;
    last_ = {representative, follower, op, seconds};
    check(kSkewLimit);
  }
  // At the end of the run.
  void finish() { check(kSkewBudget); }
  void diverged(int follower, int representative, uint32_t op) override {
    stop("GPU " + std::to_string(follower) + "'s op " + std::to_string(op) +
         " completed a call more or fewer times than GPU " + std::to_string(representative) + "'s, which it replays");
  }
  // A flow crossed a link left to quiet nodes' calls.
  void crossed(const std::string& link) {
    stop("a flow crossed " + link + ", a link between the GPUs of a node whose calls among them were left out");
  }
  const std::string& broken() const { return broken_; }
  double total_s() const { return total_s_; }

 private:
  void check(double share) {
    const double now = sc_core::sc_time_stamp().to_seconds();
    if (total_s_ <= share * now) return;
    std::ostringstream text;
    text << "by " << format_us(total_s_) << " over " << format_us(now) << " simulated, more than "
         << share * 100 << "%; the last: " << describe(last_);
    stop(text.str());
  }
  struct Skew {
    int representative = 0, follower = 0;
    uint32_t op = 0;
    double seconds = 0;
  };
  // "GPU 2560's op 4692 'pp.recv_grad' (recv, 128 MiB), 8319.970 us from GPU 2823, which replays it"
  std::string describe(const Skew& s) const {
    const workloads::Op& op = job_.ranks[size_t(s.representative)].program->ops[s.op];
    std::ostringstream text;
    text << "GPU " << s.representative << "'s op " << s.op << " '" << job_.op_name(op) << "' ("
         << (op.kind == workloads::OpKind::Collective ? to_string(op.collective) : to_string(op.kind)) << ", "
         << format_bytes(double(op.message_bytes)) << "), " << format_us(s.seconds) << " from GPU " << s.follower
         << ", which replays it";
    return text.str();
  }
  static std::string format_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    for (; bytes >= 1024.0 && u + 1 < std::size(units); ++u) bytes /= 1024.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.4g %s", bytes, units[u]);
    return text;
  }
  static std::string format_us(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f us", s * 1e6);
    return text;
  }
  void stop(const std::string& why) {
    if (!broken_.empty()) return;
    broken_ = why;
    if (sc_core::sc_is_running()) sc_core::sc_stop();
  }
  const workloads::Job& job_;
  double total_s_ = 0;
  Skew last_;
  std::string broken_;
};

// Makes the GPUs of replica groups follow their representatives.
void follow_replicas(platforms::Platform& platform, const workloads::Replicas& replicas, SymmetryWatch& watch) {
  for (size_t r = 0; r < replicas.representative.size(); ++r) {
    const int rep = replicas.representative[r];
    if (rep == static_cast<int>(r)) continue;
    platform.gpu(r).command_processor().follow(platform.gpu(size_t(rep)).command_processor(), watch);
  }
}

// Quiet nodes (workloads::quiet_nodes) and the links between GPUs of the node template
// (Routing::node_link_use) that their left-out calls would have crossed.
struct QuietLinks {
  workloads::QuietNodes nodes;
  std::vector<uint32_t> between_gpus;
  bool apart = false;  // the links between GPUs carry no traffic through the node's gateways
  // Calls f(link, its mirror's link) for each quiet node's link between GPUs (flow fabric ids).
  template <typename F>
  void for_each(const platforms::RoutedPaths& paths, F&& f) const {
    for (size_t node = 0; node < nodes.mirror.size(); ++node)
      if (nodes.mirror[node] >= 0)
        for (uint32_t t : between_gpus)
          f(paths.node_link_id(uint32_t(node), t), paths.node_link_id(uint32_t(nodes.mirror[node]), t));
  }
};

// The node template's links between its GPUs (Routing::node_link_use), or false where a link
// carries traffic between GPUs and traffic through the node's gateways both.
bool links_between_gpus(const platforms::Platform& platform, std::vector<uint32_t>& out) {
  const std::vector<uint8_t> use = platform.routing().node_link_use();
  for (uint32_t t = 0; t < use.size(); ++t) {
    if (use[t] == (platforms::Routing::kBetweenGpus | platforms::Routing::kThroughGateways)) return false;
    if (use[t] & platforms::Routing::kBetweenGpus) out.push_back(t);
  }
  return true;
}

// Followers in quiet nodes leave out their calls among the node's GPUs, where the node's links
// between GPUs carry nothing else (flow fidelity); the fabric stops the run if a flow crosses one.
QuietLinks leave_out_quiet_calls(platforms::Platform& platform, const workloads::Job& job,
                                 const workloads::Replicas& replicas, SymmetryWatch& watch) {
  QuietLinks quiet;
  models::FlowFabric* fabric = platform.flow_fabric();
  if (fabric == nullptr) return quiet;
  quiet.apart = links_between_gpus(platform, quiet.between_gpus);
  if (!quiet.apart) return quiet;
  quiet.nodes = workloads::quiet_nodes(job, replicas, int(platform.routing().topology().node.gpus));
  if (quiet.nodes.quiet == 0) return quiet;
  const platforms::RoutedPaths& paths = *platform.flow_paths();
  std::vector<bool> forbidden(fabric->links(), false);
  quiet.for_each(paths, [&forbidden](uint32_t link, uint32_t) { forbidden[link] = true; });
  fabric->forbid(std::move(forbidden), [&watch, &paths](uint32_t link) { watch.crossed(paths.name(link)); });
  std::vector<std::vector<bool>>& communicators = quiet.nodes.communicators;
  std::vector<std::vector<bool>>& peers = quiet.nodes.peers;
  for (size_t r = 0; r < communicators.size(); ++r)
    if (!communicators[r].empty() || !peers[r].empty())
      platform.gpu(r).command_processor().leave_out(std::move(communicators[r]), std::move(peers[r]));
  return quiet;
}

// Whether a ring over `ring` gives each member's transfer to the next links of its own: no
// link of the paths (every hashed choice of them) from one member to the next is on another
// member's. Then, everyone sending at once, each transfer's rate is the one it has alone.
bool rings_apart(const platforms::RoutedPaths& paths, const std::vector<int>& ring) {
  std::vector<std::pair<uint32_t, size_t>> used;  // (link, the member sending over it)
  std::vector<uint32_t> links;
  std::vector<double> shares;
  for (size_t i = 0; i < ring.size(); ++i) {
    protocol::FabricTransfer t;
    t.source = uint32_t(ring[i]);
    t.destination = uint32_t(ring[(i + 1) % ring.size()]);
    for (uint32_t chunk = 0; chunk < 64; ++chunk) {  // the paths its hash picks among
      t.chunk = chunk;
      paths.path(t, links, shares);
      for (uint32_t l : links) used.emplace_back(l, i);
    }
  }
  std::sort(used.begin(), used.end());
  for (size_t k = 1; k < used.size(); ++k)
    if (used[k].first == used[k - 1].first && used[k].second != used[k - 1].second) return false;
  return true;
}

// The one ring of the slots `echoed` (their communicators' members in ring order), or null
// where they name rings of different orders (two rings at once would share the node's links
// between the members of one and of the other) or one whose members' transfers share links.
const std::vector<int>* echoed_ring(const platforms::Platform& platform, const workloads::Job& job,
                                    const workloads::Rank& rank, const std::vector<bool>& echoed) {
  const std::vector<int>* ring = nullptr;
  for (size_t slot = 0; slot < echoed.size(); ++slot) {
    if (!echoed[slot]) continue;
    const std::vector<int>& members = job.communicators[size_t(rank.communicators[slot])].ranks;
    if (ring != nullptr && members != *ring) return nullptr;
    ring = &members;
  }
  return ring != nullptr && rings_apart(*platform.flow_paths(), *ring) ? ring : nullptr;
}

// Per op of `rank`'s program, whether it is a call on the slots `echoed` that the rank can make
// for every member (CollectiveEngine::echoes: a ring in flow fidelity; the others' calls are
// made as usual, by every member). None where the slots' ring is not one the rank can echo, or
// where a call made as usual may run beside an echoed one (they are on different streams): its
// transfers would share the node's links with the echoes' images, which do not run.
std::shared_ptr<std::vector<bool>> echoed_calls(const platforms::Platform& platform, const workloads::Job& job,
                                                const workloads::Rank& rank, const std::vector<bool>& echoed) {
  if (echoed_ring(platform, job, rank, echoed) == nullptr) return nullptr;
  const models::CollectiveEngine& engine = platform.gpu(size_t(rank.rank)).collectives();
  std::map<std::tuple<int, uint64_t, int, int, int>, bool> checked;  // (slot, bytes, kind, algorithm, protocol)
  const std::vector<workloads::Op>& ops = rank.program->ops;
  auto out = std::make_shared<std::vector<bool>>(ops.size(), false);
  std::set<uint16_t> streams;  // of the calls on the slots
  bool any = false, all = true;
  protocol::CollectiveEvent e;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const workloads::Op& op = ops[i];
    if (op.kind != workloads::OpKind::Collective || size_t(op.slot) >= echoed.size() || !echoed[size_t(op.slot)])
      continue;
    models::fill_communication_event(e, job, rank, i, op, 0);
    const auto [it, fresh] = checked.emplace(std::make_tuple(op.slot, e.bytes, int(e.kind), int(e.algorithm), int(e.protocol)), false);
    if (fresh) it->second = engine.echoes(e);
    (*out)[i] = it->second;
    any = any || it->second;
    all = all && it->second;
    streams.insert(op.stream);
  }
  return any && (all || streams.size() == 1) ? out : nullptr;
}

// Echo nodes (workloads::echo_nodes) whose rings among their GPUs give each member links of its
// own: the simulated GPU makes those rings alone (CollectiveEngine::echo), its followers leave
// them out. Only where the links between a node's GPUs carry nothing through its gateways
// (`quiet.apart`, found for quiet nodes). Returns the echo nodes; `echoing` marks their followers.
int echo_node_calls(platforms::Platform& platform, const workloads::Job& job, const workloads::Replicas& replicas,
                    const QuietLinks& quiet, std::vector<bool>& echoing) {
  if (!quiet.apart) return 0;
  const size_t g = platform.routing().topology().node.gpus;
  const workloads::EchoNodes nodes = workloads::echo_nodes(job, replicas, int(g));
  int echo = 0;
  for (size_t node = 0; node < nodes.simulated.size(); ++node) {
    const int rep = nodes.simulated[node];
    if (rep < 0) continue;
    const workloads::Rank& rank = job.ranks[size_t(rep)];
    const std::vector<bool>& slots = nodes.communicators[size_t(rep)];
    const std::shared_ptr<const std::vector<bool>> calls = echoed_calls(platform, job, rank, slots);
    if (!calls) continue;
    for (size_t slot = 0; slot < slots.size(); ++slot)
      if (slots[slot]) platform.gpu(size_t(rep)).collectives().echo(rank.communicators[slot]);
    for (size_t r = node * g; r < (node + 1) * g; ++r) {
      if (int(r) == rep) continue;
      platform.gpu(r).command_processor().leave_out_echoed(calls);
      echoing[r] = true;
    }
    ++echo;
  }
  return echo;
}

// A quiet node's links between its GPUs report what its mirror's carried.
void mirror_quiet_links(const platforms::RoutedPaths& paths, const QuietLinks& quiet, std::vector<LinkResult>& links,
                        size_t first) {
  quiet.for_each(paths, [&](uint32_t to_id, uint32_t from_id) {
    LinkResult& to = links[first + to_id];
    const LinkResult& from = links[first + from_id];
    to.bytes = from.bytes;
    to.chunks = from.chunks;
    to.busy_s = from.busy_s;
  });
}

// Throws SymmetryBroken where a follower left its representative's steps, or the run did not
// finish (which the run without symmetry reports, rank by rank).
void check_followers(platforms::Platform& platform, SymmetryWatch& watch) {
  watch.finish();
  if (!watch.broken().empty()) throw SymmetryBroken(watch.broken());
  for (size_t r = 0; r < platform.gpu_count(); ++r) {
    const models::CommandProcessor& cp = platform.gpu(r).command_processor();
    if (cp.follower() ? !cp.in_step() : !cp.finished())
      throw SymmetryBroken("GPU " + std::to_string(r) + " did not finish in step with the GPUs it replays or that replay it");
  }
}

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
  platforms::Platform& platform = *new platforms::Platform("platform", config, job, pool, collectives,
                                                                  options.fidelity, options.topology);

  // Symmetry: replica groups' GPUs replay their representatives' communication.
  workloads::Replicas replicas;
  // Flow fidelity only: packet fidelity's switches serve a collective's members in an order of
  // their own, so members finish a call apart (by arbitration) and a replay would not be exact.
  if (options.symmetry && options.fidelity == platforms::Fidelity::Flow && platform.rtl_ports().empty())
    replicas = workloads::find_replicas(job);
  const bool symmetric = replicas.any();
  SymmetryWatch watch(job);

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
  QuietLinks quiet;
  std::vector<bool> echoing(job.ranks.size(), false);  // followers in echo nodes
  int echo_nodes = 0;
  if (symmetric) {
    follow_replicas(platform, replicas, watch);
    quiet = leave_out_quiet_calls(platform, job, replicas, watch);
    echo_nodes = echo_node_calls(platform, job, replicas, quiet, echoing);
  }
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
  if (symmetric) check_followers(platform, watch);

  SimulationResult result;
  result.fidelity = options.fidelity;
  result.fidelity_reason = options.fidelity_reason;
  if (symmetric) {
    result.gpus_simulated = replicas.simulated;
    result.symmetry_skew_s = watch.total_s();
    result.quiet_nodes = quiet.nodes.quiet;
    result.echo_nodes = echo_nodes;
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
    rr = result.ranks[size_t(replicas.representative[r])];
    rr.rank = static_cast<int>(r);
    if (echoing[r]) continue;  // its calls in the node were its representative's echoes: its bytes too
    rr.bytes_sent = platform.gpu(r).collectives().bytes_injected();
    rr.bytes_received = platform.gpu(r).collectives().bytes_received();
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
    if (quiet.nodes.quiet > 0) mirror_quiet_links(paths, quiet, result.links, first);
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
  per_iteration(result, options.iterations);
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
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
