#include "sc_main/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>

#include "sc_main/output_file.h"

namespace tessera::app {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}


using nlohmann::ordered_json;

namespace {

double model_tflops_per_gpu(const workloads::Job& job, const SimulationResult& r) {
  if (r.iteration_time_s <= 0) return 0;
  return job.info.model_flops / r.iteration_time_s / double(job.ranks.size()) / 1e12;
}
double hardware_tflops_per_gpu(const workloads::Job& job, const SimulationResult& r) {
  if (r.iteration_time_s <= 0) return 0;
  return job.info.hardware_flops / r.iteration_time_s / double(job.ranks.size()) / 1e12;
}
// MFU against the peak of the dtype most of the work runs in (the model's dtype).
double peak_tflops(const platforms::PlatformConfig& p, const workloads::Job& job) {
  for (const auto& rank : job.ranks)
    for (const auto& op : rank.program->ops)
      if (op.kind == workloads::OpKind::Compute && op.gemm.valid())
        return p.gpu.peak_tflops[static_cast<size_t>(op.dtype)];
  return p.gpu.peak_tflops[static_cast<size_t>(workloads::DType::BF16)];
}

// Compute time by what it went to (models::ComputeCause), in seconds.
ordered_json compute_by_cause(const std::array<double, models::kComputeCauses>& seconds) {
  ordered_json j;
  for (int c = 0; c < models::kComputeCauses; ++c)
    j[models::to_string(static_cast<models::ComputeCause>(c))] = seconds[c];
  return j;
}

// The iteration by cause (models::TimeCause), seconds.
ordered_json time_by_cause(const std::array<double, models::kTimeCauses>& seconds) {
  ordered_json j;
  for (int c = 0; c < models::kTimeCauses; ++c) j[models::to_string(static_cast<models::TimeCause>(c))] = seconds[c];
  return j;
}

// The mean over ranks of each cause: each rank's causes add up to the iteration time, so
// these do too.
std::array<double, models::kTimeCauses> mean_time_by_cause(const SimulationResult& r) {
  std::array<double, models::kTimeCauses> mean{};
  for (const RankResult& rr : r.ranks)
    for (int c = 0; c < models::kTimeCauses; ++c) mean[c] += rr.time_by_cause[c] / double(r.ranks.size());
  return mean;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Each rank's times and compute by cause, the mean over ranks.
ordered_json mean_over_ranks(const SimulationResult& r) {
  const double n = r.ranks.empty() ? 1.0 : double(r.ranks.size());
  double compute = 0, exposed = 0, overlapped = 0, idle = 0;
  std::array<double, models::kComputeCauses> by_cause{};
  for (const RankResult& rr : r.ranks) {
    compute += rr.compute_s / n;
    exposed += rr.exposed_communication_s / n;
    overlapped += rr.overlapped_communication_s / n;
    idle += rr.idle_s / n;
    for (int c = 0; c < models::kComputeCauses; ++c) by_cause[c] += rr.compute_by_cause[c] / n;
  }
  return {{"compute_time_s", compute},
          {"exposed_communication_time_s", exposed},
          {"overlapped_communication_time_s", overlapped},
          {"idle_time_s", idle},
          {"compute_by_cause_s", compute_by_cause(by_cause)}};
}

double largest_peak_memory_gib(const SimulationResult& r, const std::vector<workloads::MemoryBreakdown>& memory) {
  double largest = 0;
  for (const RankResult& rr : r.ranks)
    if (static_cast<size_t>(rr.rank) < memory.size()) largest = std::max(largest, memory[rr.rank].peak / kGiB);
  return largest;
}

// A rank: its times, compute and iteration by cause, traffic, memory.
ordered_json rank_json(const RankResult& rr, const std::vector<workloads::MemoryBreakdown>& memory) {
  ordered_json rank = {{"rank", rr.rank},
                       {"finish_time_s", rr.finish_s},
                       {"compute_time_s", rr.compute_s},
                       {"exposed_communication_time_s", rr.exposed_communication_s},
                       {"overlapped_communication_time_s", rr.overlapped_communication_s},
                       {"idle_time_s", rr.idle_s},
                       {"compute_by_cause_s", compute_by_cause(rr.compute_by_cause)},
                       {"time_by_cause_s", time_by_cause(rr.time_by_cause)},
                       {"ops", rr.ops},
                       {"bytes_sent", rr.bytes_sent},
                       {"bytes_received", rr.bytes_received}};
  if (static_cast<size_t>(rr.rank) < memory.size()) {
    const workloads::MemoryBreakdown& m = memory[rr.rank];
    rank["peak_memory_gib"] = m.peak / kGiB;
    rank["memory_gib"] = {{"parameters", m.params / kGiB},
                          {"gradients", m.grads / kGiB},
                          {"optimizer_states", m.optimizer / kGiB},
                          {"activations", m.activations / kGiB},
                          {"temporary", m.temporary / kGiB}};
  }
  return rank;
}

// A link (one direction): what it carried and how busy it was.
ordered_json link_json(const LinkResult& l, const SimulationResult& r) {
  return {{"name", l.name},
          {"kind", l.kind},
          {"bandwidth_gb_per_s", l.bandwidth_bytes_per_s / 1e9},
          {"bytes", l.bytes},
          {"busy_time_s", l.busy_s},
          {"utilization", r.iteration_time_s > 0 ? l.busy_s / r.iteration_time_s : 0.0}};
}

// Writes `items` in place of the empty array that `key` (a key of the top-level object) holds
// in `text` (ordered_json::dump(1)), each element made by `element` and dumped as dump(1) would
// dump it there; `put` takes the text piece by piece.
template <typename Items, typename Element>
size_t put_array(const std::string& text, size_t from, const std::string& key, const Items& items, Element element,
                 const std::function<void(const std::string&)>& put) {
  const std::string empty = "\n \"" + key + "\": []";
  const size_t at = text.find(empty, from);
  if (at == std::string::npos) throw std::logic_error("report: no " + key + " to fill");
  const size_t bracket = at + empty.size() - 1;  // the closing one
  put(text.substr(from, bracket - from));
  if (!items.empty()) {
    put("\n");
    std::string piece;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string one = element(items[i]).dump(1);
      piece.assign(i == 0 ? "  " : ",\n  ");
      for (char c : one) {
        piece.push_back(c);
        if (c == '\n') piece.append("  ");
      }
      put(piece);
    }
    put("\n ");
  }
  return bracket;
}

// The RTL blocks of a run, by block: how many ports, cycles evaluated, decisions.
struct RtlBlockTotals {
  std::string kind;
  uint64_t ports = 0, cycles = 0, decisions = 0;
  double clock_cycles = 0;  // the ports' clocks over the run, had they never been gated
};

std::map<std::string, RtlBlockTotals> rtl_totals(const SimulationResult& r) {
  std::map<std::string, RtlBlockTotals> blocks;
  for (const RtlPortResult& p : r.rtl) {
    RtlBlockTotals& b = blocks[p.block];
    b.kind = p.kind;
    ++b.ports;
    b.cycles += p.cycles;
    b.decisions += p.decisions;
    b.clock_cycles += p.period_s > 0 ? r.simulated_s / p.period_s : 0;
  }
  return blocks;
}

// "1,234,567"
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

ordered_json rtl_json(const SimulationResult& r) {
  ordered_json j;
  uint64_t cycles = 0, decisions = 0;
  double clock_cycles = 0;
  ordered_json blocks = ordered_json::object();
  for (const auto& [name, b] : rtl_totals(r)) {
    cycles += b.cycles;
    decisions += b.decisions;
    clock_cycles += b.clock_cycles;
    blocks[name] = {{"kind", b.kind}, {"ports", b.ports}, {"cycles", b.cycles}, {"decisions", b.decisions}};
  }
  j["ports"] = r.rtl.size();
  j["cycles"] = cycles;
  j["decisions"] = decisions;
  j["clock_cycles"] = clock_cycles;
  j["gated_fraction"] = clock_cycles > 0 ? 1.0 - double(cycles) / clock_cycles : 0.0;
  j["wall_time_s"] = r.wall_s;
  j["cycles_per_wall_s"] = r.wall_s > 0 ? double(cycles) / r.wall_s : 0.0;
  if (r.has_reference) {
    j["wall_time_without_rtl_s"] = r.reference_wall_s;
    j["slowdown"] = r.reference_wall_s > 0 ? r.wall_s / r.reference_wall_s : 0.0;
    j["iteration_time_without_rtl_s"] = r.reference_iteration_time_s;
  }
  j["blocks"] = blocks;
  ordered_json ports = ordered_json::array();
  for (const RtlPortResult& p : r.rtl)
    ports.push_back({{"port", p.port},
                     {"block", p.block},
                     {"kind", p.kind},
                     {"clock_ghz", p.period_s > 0 ? 1e-9 / p.period_s : 0.0},
                     {"cycles", p.cycles},
                     {"decisions", p.decisions}});
  j["port_list"] = ports;
  return j;
}

}  // namespace

ordered_json report_json(const platforms::PlatformConfig& platform, const workloads::Job& job,
                         const std::vector<workloads::MemoryBreakdown>& memory,
                         const SimulationResult& r, ReportDetail detail) {
  ordered_json j;
  j["platform"] = {{"name", platform.name},
                   {"gpu", platform.gpu.name},
                   {"nodes", platform.nodes},
                   {"gpus_per_node", platform.node.gpus},
                   {"gpus", platform.gpu_count()},
                   {"network", platforms::topology_name(platform.network.topology)}};
  j["workload"] = {{"model", job.info.model},
                   {"global_batch_samples", job.info.global_batch},
                   {"seq_length_tokens", job.info.seq_length},
                   {"model_flops_per_iteration", job.info.model_flops},
                   {"hardware_flops_per_iteration", job.info.hardware_flops},
                   {"ranks", job.ranks.size()}};
  j["iteration_time_s"] = r.iteration_time_s;
  const double samples = r.iteration_time_s > 0 ? double(job.info.global_batch) / r.iteration_time_s : 0;
  j["throughput_samples_per_s"] = samples;
  j["throughput_tokens_per_s"] = samples * double(job.info.seq_length);
  j["model_tflops_per_gpu"] = model_tflops_per_gpu(job, r);
  j["hardware_tflops_per_gpu"] = hardware_tflops_per_gpu(job, r);
  j["mfu"] = model_tflops_per_gpu(job, r) / peak_tflops(platform, job);
  j["time_by_cause_s"] = time_by_cause(mean_time_by_cause(r));
  j["mean_over_ranks"] = mean_over_ranks(r);
  if (!memory.empty()) j["peak_memory_gib"] = largest_peak_memory_gib(r, memory);
  if (detail == ReportDetail::Full) {  // (write_report fills them in, one element at a time)
    j["ranks"] = ordered_json::array();
    j["links"] = ordered_json::array();
  }
  j["simulation"] = {{"fidelity", platforms::fidelity_name(r.fidelity)},
                     {"iterations", r.iterations},
                     {"fabric_transactions", r.transactions},
                     {"flows", r.flows}};
  if (!r.fidelity_reason.empty()) j["simulation"]["fidelity_reason"] = r.fidelity_reason;
  if (r.huge_pages) j["simulation"]["huge_pages"] = true;
  if (r.fidelity == platforms::Fidelity::Analytic) j["simulation"]["ranks_costed"] = r.classes;
  if (r.fidelity == platforms::Fidelity::Flow) j["simulation"]["links_never_filling"] = r.links_never_filling;
  if (r.fidelity != platforms::Fidelity::Analytic)
    j["simulation"]["gpus_simulated"] = r.gpus_simulated > 0 ? size_t(r.gpus_simulated) : r.ranks.size();
  if (r.gpus_simulated > 0) {
    j["simulation"]["gpus_parted"] = r.gpus_parted;
    j["simulation"]["gpus_followed_parted"] = r.gpus_followed_parted;
    j["simulation"]["symmetry_skew_s"] = r.symmetry_skew_s;
    j["simulation"]["quiet_nodes"] = r.quiet_nodes;
    j["simulation"]["echo_nodes"] = r.echo_nodes;
    j["simulation"]["rail_images"] = r.rail_images;
  }
  if (!r.rtl.empty()) j["rtl"] = rtl_json(r);
  return j;
}

void print_summary(std::ostream& out, const platforms::PlatformConfig& platform,
                   const workloads::Job& job,
                   const std::vector<workloads::MemoryBreakdown>& memory,
                   const SimulationResult& r) {
  const double it = r.iteration_time_s;
  out << "tessera: " << job.info.model << " on " << platform.name << " (" << platform.gpu_count()
      << " x " << platform.gpu.name << ")"
      << (r.fidelity != platforms::Fidelity::Packet ? std::string(", ") + platforms::fidelity_name(r.fidelity) + " fidelity" : "")
      << "\n";
  out << "  iteration time        " << format("%.3f ms", it * 1e3)
      << (r.iterations > 1 ? " (the mean of " + std::to_string(r.iterations) + " iterations)" : "") << "\n";
  const double samples = it > 0 ? double(job.info.global_batch) / it : 0;
  out << "  throughput            " << format("%.1f samples/s", samples) << ", "
      << format("%.0f tokens/s", samples * double(job.info.seq_length)) << "\n";
  out << "  model TFLOP/s per GPU " << format("%.1f", model_tflops_per_gpu(job, r)) << " (MFU "
      << format("%.1f%%", 100.0 * model_tflops_per_gpu(job, r) / peak_tflops(platform, job))
      << ")\n";
  out << "  per GPU                 compute   exposed comm   overlapped comm       idle   peak memory\n";
  // Many GPUs: the first eight and the one that finished last; the report has them all.
  const size_t shown = r.ranks.size() > 16 ? 8 : r.ranks.size();
  size_t last = 0;
  for (size_t k = 0; k < r.ranks.size(); ++k)
    if (r.ranks[k].finish_s > r.ranks[last].finish_s) last = k;
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    if (k >= shown && k != last) continue;
    if (k == last && k >= shown)
      out << "    ... " << r.ranks.size() - shown - 1 << " more in the report (--report); the last to finish:\n";
    const RankResult& rr = r.ranks[k];
    char line[200];
    std::snprintf(line, sizeof line, "    gpu%-3d            %9.3f ms  %9.3f ms      %9.3f ms  %9.3f ms",
                  rr.rank, rr.compute_s * 1e3, rr.exposed_communication_s * 1e3,
                  rr.overlapped_communication_s * 1e3, rr.idle_s * 1e3);
    out << line;
    if (static_cast<size_t>(rr.rank) < memory.size())
      out << format("  %8.2f GiB", memory[rr.rank].peak / (1024.0 * 1024.0 * 1024.0));
    out << "\n";
  }
  if (!r.ranks.empty()) {
    const RankResult& first = r.ranks[0];
    out << "  compute of gpu0       ";
    const char* labels[] = {"GEMM", "attention", "memory-bound", "framework"};
    for (int c = 0; c < models::kComputeCauses; ++c)
      out << (c ? ", " : "") << format("%.3f ms ", first.compute_by_cause[c] * 1e3) << labels[c];
    out << "\n";
  }
  if (!r.ranks.empty()) {
    const auto mean = mean_time_by_cause(r);
    const char* labels[] = {"compute", "TP", "CP/EP", "pipeline bubble", "DP/ZeRO", "optimizer", "idle"};
    out << "  time by cause         ";
    for (int c = 0; c < models::kTimeCauses; ++c)
      out << (c ? ", " : "") << format("%.3f ms ", mean[c] * 1e3) << labels[c];
    out << " (mean over GPUs)\n";
  }
  if (r.fidelity == platforms::Fidelity::Analytic)
    out << "  analytic model        " << r.classes << " of " << r.ranks.size() << " ranks costed"
        << (static_cast<size_t>(r.classes) < r.ranks.size() ? " (the others are equivalent to one of them)" : "") << ", "
        << format("%.3f s", r.wall_s) << format(" (%.3f s of CPU)", r.cpu_s) << "\n";
  if (r.gpus_simulated > 0)
    out << "  symmetry              " << r.gpus_simulated << " of " << r.ranks.size()
        << " GPUs simulated, the others replay one of them; their communication completed "
        << format("%.3f us", r.symmetry_skew_s * 1e6) << " apart in all (--symmetry off simulates every GPU)\n";
  if (r.gpus_parted > 0)
    out << "  parted                " << r.gpus_parted
        << " replaying GPUs whose calls came apart from their representatives' ran their own programs from there"
        << (r.gpus_followed_parted > 0
                ? "; " + std::to_string(r.gpus_followed_parted) + " more replay one of them (those that came apart alike, and"
                      " the GPUs of a parted node whose calls among them it echoes)"
                : std::string())
        << "\n";
  if (r.quiet_nodes > 0)
    out << "  quiet nodes           " << r.quiet_nodes
        << " nodes of replaying GPUs only: their calls among their own GPUs were left out, and their links"
           " between GPUs report a like node's traffic\n";
  if (r.echo_nodes > 0)
    out << "  echo nodes            " << r.echo_nodes
        << " nodes of a simulated GPU and GPUs replaying it: its rings and in-switch reductions among them ran"
           " alone, each transfer standing for every member's (their links report them all)\n";
  if (r.rail_images > 0)
    out << "  rail images           " << r.rail_images
        << " replaying GPUs: their calls across the network were another GPU's of their node, on their own rails"
           " (their links and bytes count them)\n";
  if (r.links_never_filling > 0)
    out << "  links never filling   " << r.links_never_filling
        << " network links between switches carry less than they can whatever the traffic: rates were solved"
           " without them\n";
  if (r.huge_pages)
    out << "  memory pages          2 MiB: the allocator asked the kernel for transparent huge pages"
           " (TESSERA_HUGE_PAGES=off runs on its 4 KiB pages)\n";
  if (!r.fidelity_reason.empty())
    out << "  fidelity              " << platforms::fidelity_name(r.fidelity) << " (" << r.fidelity_reason << ")\n";
  double busiest = 0;
  std::string busiest_name;
  for (const LinkResult& l : r.links)
    if (l.busy_s > busiest) busiest = l.busy_s, busiest_name = l.name;
  if (!busiest_name.empty())
    out << "  busiest link          " << busiest_name << ", "
        << format("%.1f%% busy", it > 0 ? 100.0 * busiest / it : 0.0) << "\n";
  if (r.rtl.empty()) return;
  uint64_t cycles = 0;
  double clock_cycles = 0;
  std::string blocks;
  for (const auto& [name, b] : rtl_totals(r)) {
    cycles += b.cycles;
    clock_cycles += b.clock_cycles;
    blocks += (blocks.empty() ? "" : ", ") + name + " (" + b.kind + ") at " + std::to_string(b.ports) + " port" +
              (b.ports > 1 ? "s" : "");
  }
  out << "  RTL co-simulation     " << blocks << "\n";
  out << "  RTL cycles            " << grouped(cycles) << " evaluated, "
      << format("%.3f%%", clock_cycles > 0 ? 100.0 * (1.0 - double(cycles) / clock_cycles) : 0.0)
      << " of the ports' clock cycles gated; " << format("%.0f", r.wall_s > 0 ? double(cycles) / r.wall_s : 0.0)
      << " cycles/s\n";
  out << "  co-simulation cost    wall " << format("%.2f s", r.wall_s);
  if (r.has_reference) {
    out << ", " << format("%.2f s", r.reference_wall_s) << " without RTL ("
        << format("%.2fx", r.reference_wall_s > 0 ? r.wall_s / r.reference_wall_s : 0.0) << "); iteration time "
        << format("%+.4f%%", r.reference_iteration_time_s > 0 ? 100.0 * (r.iteration_time_s / r.reference_iteration_time_s - 1.0) : 0.0)
        << " against the run without RTL";
  } else {
    out << " (no run without RTL to compare: --rtl-reference false)";
  }
  out << "\n";
}

ordered_json trace_json(const platforms::PlatformConfig& platform, const workloads::Job& job,
                        const SimulationResult& r, double bucket_us) {
  ordered_json events = ordered_json::array();
  for (const RankResult& rr : r.ranks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rr.rank},
                      {"args", {{"name", "gpu" + std::to_string(rr.rank)}}}});
    for (size_t s = 0; s < job.stream_names.size(); ++s)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rr.rank}, {"tid", s},
                        {"args", {{"name", job.stream_names[s]}}}});
  }
  for (const RankResult& rr : r.ranks) {
    const workloads::Program& program = *job.ranks[rr.rank].program;
    std::vector<models::OpSpan> spans = rr.spans;
    std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.start < b.start;
    });
    for (const models::OpSpan& s : spans) {
      const workloads::Op& op = program.ops[s.op];
      ordered_json args = {{"op", s.op}};
      if (op.kind == workloads::OpKind::Compute) {
        args["flops"] = op.flops;
        args["bytes"] = op.bytes;
        args["phase"] = workloads::to_string(op.phase);
        args["kernel"] = workloads::to_string(op.kernel);
        if (op.kernels > 1) args["kernels"] = op.kernels;
        if (op.gemm.valid())
          args["gemm"] = {op.gemm.batch, op.gemm.m, op.gemm.n, op.gemm.k};
      } else {
        args["bytes"] = op.message_bytes;
      }
      events.push_back({{"name", job.op_name(op)},
                        {"cat", workloads::to_string(op.kind)},
                        {"ph", "X"},
                        {"pid", rr.rank},
                        {"tid", op.stream},
                        {"ts", s.start.to_seconds() * 1e6},
                        {"dur", (s.end - s.start).to_seconds() * 1e6},
                        {"args", args}});
    }
  }
  // A lane per cause: when the rank's time went to it (models::TimeCause).
  const int cause_tid = static_cast<int>(job.stream_names.size());
  for (const RankResult& rr : r.ranks) {
    if (rr.cause_spans.empty()) continue;
    for (int c = 0; c < models::kTimeCauses; ++c)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rr.rank}, {"tid", cause_tid + c},
                        {"args", {{"name", std::string("cause: ") + models::to_string(static_cast<models::TimeCause>(c))}}}});
    for (const models::CauseSpan& span : rr.cause_spans)
      events.push_back({{"name", models::to_string(span.cause)},
                        {"cat", "cause"},
                        {"ph", "X"},
                        {"pid", rr.rank},
                        {"tid", cause_tid + static_cast<int>(span.cause)},
                        {"ts", span.start_s * 1e6},
                        {"dur", (span.end_s - span.start_s) * 1e6}});
  }
  const int fabric_pid = platform.gpu_count();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", fabric_pid},
                    {"args", {{"name", "links"}}}});
  for (const LinkResult& l : r.links) {
    for (size_t b = 0; b < l.activity.size(); ++b) {
      const double gbps = double(l.activity[b]) / (bucket_us * 1e-6) / 1e9;
      events.push_back({{"name", l.name}, {"ph", "C"}, {"pid", fabric_pid},
                        {"ts", double(b) * bucket_us}, {"args", {{"GB/s", gbps}}}});
    }
    if (!l.activity.empty())
      events.push_back({{"name", l.name}, {"ph", "C"}, {"pid", fabric_pid},
                        {"ts", double(l.activity.size()) * bucket_us}, {"args", {{"GB/s", 0.0}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

void write_json_file(const std::string& path, const ordered_json& json) {
  write_output(path, json.dump(1) + "\n");
}

void write_report(const std::string& path, const platforms::PlatformConfig& platform, const workloads::Job& job,
                  const std::vector<workloads::MemoryBreakdown>& memory, const SimulationResult& r,
                  ReportDetail detail) {
  const std::string text = report_json(platform, job, memory, r, detail).dump(1) + "\n";
  if (detail != ReportDetail::Full) return write_output(path, text);
  write_output_pieces(path, [&](const std::function<void(const std::string&)>& put) {
    size_t at = put_array(text, 0, "ranks", r.ranks, [&](const RankResult& rr) { return rank_json(rr, memory); }, put);
    at = put_array(text, at, "links", r.links, [&](const LinkResult& l) { return link_json(l, r); }, put);
    put(text.substr(at));
  });
}

}  // namespace tessera::app
