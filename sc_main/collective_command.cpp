#include "sc_main/collective_command.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

#include <boost/program_options.hpp>

#include "calibration/measured_curve.h"
#include "calibration/nccl_tests.h"
#include "calibration/svg_plot.h"
#include "sc_main/cli.h"
#include "platforms/platform.h"
#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "sc_main/report.h"
#include "sc_main/watchdog.h"

namespace po = boost::program_options;

namespace tessera::app {

namespace {

// Rows of one sweep: each is one collective of every GPU, so thousands already take minutes.
constexpr int kMaxSweepRows = 4096;

// "16G", "512K", "8" -> bytes (K = 1024).
uint64_t parse_size(const std::string& text, const char* option) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError(std::string("--") + option + ": not a size: '" + text + "'");
  }
  std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B")
    throw InputError(std::string("--") + option + ": unknown size suffix in '" + text + "' (K, M, G)");
  const std::string problem =
      limits::problem(value * scale, limits::Range{1, limits::kMaxOpBytes, false, true});
  if (!problem.empty())
    throw InputError(std::string("--") + option + " " + text + ": a size in bytes " + problem);
  return static_cast<uint64_t>(value * scale);
}

using calibration::op_key;

// nccl-tests' sendrecv: every rank sends to rank + 1 and receives from rank - 1 at once.
bool is_sendrecv(const std::string& name) { return op_key(name) == "sendrecv"; }

workloads::CollectiveKind parse_op(const std::string& name) {
  const std::string n = op_key(name);
  workloads::CollectiveKind kind;
  if (n == "alltoallv" || !workloads::parse_collective_kind(n, kind))
    throw InputError("--op: unknown collective '" + name +
                     "' (allreduce, reducescatter, allgather, alltoall, broadcast, reduce, sendrecv)");
  return kind;
}

// The name nccl-tests' bus-bandwidth factors know the op by.
std::string op_name(const std::string& name) {
  return is_sendrecv(name) ? "sendrecv" : workloads::to_string(parse_op(name));
}

// The communicator of the sweep's GPUs, as the collective engines see it.
models::CommunicatorShape world_shape(const platforms::PlatformConfig& platform,
                                      const models::CollectiveEngineConfig& engine, const std::vector<int>& ranks) {
  const int g = engine.gpus_per_node > 0 ? engine.gpus_per_node : platform.node.gpus;
  return models::communicator_shape(ranks, g, engine.dimensions, platform.node.gpus);
}

// A barrier of every rank (the world communicator, slot 0) on the sweep's stream.
workloads::Op barrier_op(workloads::Job& job) {
  workloads::Op op;
  op.kind = workloads::OpKind::Collective;
  op.collective = workloads::CollectiveKind::Barrier;
  op.stream = 0;
  op.slot = 0;
  op.name = job.intern("barrier");
  return op;
}

}  // namespace

std::vector<int> sweep_members(const platforms::PlatformConfig& platform, int gpus_per_node) {
  const int per_node = platform.node.gpus;
  const int g = gpus_per_node > 0 ? std::min(gpus_per_node, per_node) : per_node;
  std::vector<int> members;
  for (int node = 0; node < platform.nodes; ++node)
    for (int i = 0; i < g; ++i) members.push_back(node * per_node + i);
  return members;
}

std::vector<uint64_t> sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, double factor) {
  std::vector<uint64_t> sizes;
  for (double s = double(min_bytes); s <= double(max_bytes) * (1 + 1e-12); s *= factor) {
    sizes.push_back(static_cast<uint64_t>(std::llround(s)));
    if (factor <= 1) break;
  }
  return sizes;
}

std::vector<SweepRow> run_sweep(const platforms::PlatformConfig& platform, const SweepSettings& s,
                                SimulationResult* simulation) {
  const bool sendrecv = is_sendrecv(s.op);
  const workloads::CollectiveKind kind = sendrecv ? workloads::CollectiveKind::AllReduce : parse_op(s.op);
  const std::vector<uint64_t> sizes = sweep_sizes(s.min_bytes, s.max_bytes, s.step_factor);
  const std::vector<int> members = sweep_members(platform, s.gpus_per_node);
  const int n = int(members.size());
  workloads::Job job;
  job.communicators.push_back(workloads::Communicator{"world", members});
  job.p2p_ranks = n;  // nccl-tests' sendrecv: one communicator of every rank
  job.stream_names.push_back("comm");
  // Each size starts after a barrier of all ranks, as nccl-tests' BenchTime does (Barrier before
  // its timed loop): without it a rank that finished the last size early (a leaf of a tree
  // across nodes) starts this one while the others still run that, and each size is timed on
  // the skew the sizes before it left. Then, for sendrecv, one op sends the size to the next rank
  // (peer slot 0) and the next receives it from the previous one (slot 1) on the same stream: a
  // send completes once its data has left, so the receive runs while the send is on the wire;
  // for a collective, one op. first[i]: the first op of size i.
  auto program = std::make_shared<workloads::Program>();
  std::vector<size_t> first(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) program->ops.push_back(barrier_op(job));
    first[i] = program->ops.size();
    workloads::Op op;
    op.message_bytes = sizes[i];
    op.stream = 0;
    if (sendrecv) {
      op.tag = static_cast<uint32_t>(i);
      op.name = job.intern("sendrecv " + std::to_string(sizes[i]));
      for (const workloads::OpKind k : {workloads::OpKind::Send, workloads::OpKind::Recv}) {
        op.kind = k;
        op.slot = k == workloads::OpKind::Send ? 0 : 1;
        program->ops.push_back(op);
      }
      continue;
    }
    op.kind = workloads::OpKind::Collective;
    op.collective = kind;
    op.slot = 0;
    op.name = job.intern(std::string(workloads::to_string(kind)) + " " + std::to_string(sizes[i]));
    program->ops.push_back(op);
  }
  // Every GPU is a rank of the job; those that take no part run nothing.
  const auto idle = std::make_shared<workloads::Program>();
  for (int g = 0; g < platform.gpu_count(); ++g) {
    workloads::Rank rank;
    rank.rank = g;
    rank.program = idle;
    job.ranks.push_back(rank);
  }
  for (int r = 0; r < n; ++r) {
    workloads::Rank& rank = job.ranks[size_t(members[size_t(r)])];
    rank.program = program;
    rank.communicators = {0};
    if (sendrecv) rank.peers = {members[size_t((r + 1) % n)], members[size_t((r + n - 1) % n)]};
  }
  SimulationOptions options = s.options;
  options.trace = true;                 // op spans
  options.trace_bucket_us = 1e9;        // no link counters worth speaking of
  const SimulationResult result = simulate(platform, job, options);
  if (result.deadlocked) throw CannotFinish(describe_deadlock(result));
  if (simulation != nullptr) *simulation = result;

  // The tuner's choice for each size, as the engines make it (CollectiveEngine::choice): the
  // same tuner (predicting with the engine's chunk) and the same function, in either fidelity.
  const models::CollectiveEngineConfig& engine = options.collectives;
  models::TunerConfig tuning = engine.tuner;
  tuning.chunk_bytes = options.chunk_bytes;
  const models::Tuner tuner(tuning, platforms::fabric_facts(platform));
  const models::CommunicatorShape shape = world_shape(platform, engine, members);

  const double factor = calibration::bus_bandwidth_factor(op_name(s.op), n);
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < sizes.size(); ++i) {
    SweepRow row;
    row.size_bytes = sizes[i];
    row.count = sizes[i] / 4;
    // A call's time: the longest any rank spends from its first op's start to its last op's end.
    const size_t begin = first[i], last = sendrecv ? begin + 1 : begin;
    double longest = 0;
    for (const int member : members) {
      const RankResult& rank = result.ranks[size_t(member)];
      sc_core::sc_time start = sc_core::SC_ZERO_TIME, end = sc_core::SC_ZERO_TIME;
      for (const models::OpSpan& span : rank.spans) {
        if (span.op == begin) start = span.start;
        if (span.op == last) end = span.end;
      }
      if (end > start) longest = std::max(longest, (end - start).to_seconds());
    }
    row.time_us = longest * 1e6;
    row.algbw_gbps = longest > 0 ? double(sizes[i]) / longest / 1e9 : 0;
    row.busbw_gbps = row.algbw_gbps * factor;
    if (sendrecv) {  // point to point: no collective algorithm, one chunked message each way
      row.algorithm = "p2p";
      row.protocol = "simple";
      rows.push_back(row);
      continue;
    }
    const models::Choice c =
        models::choose_call(tuner, models::collective_op(kind), sizes[i], shape, models::CollectiveAlgorithm::Automatic,
                            models::CollectiveProtocol::Automatic, engine.algorithm, engine.protocol, engine.channels);
    row.algorithm = models::algorithm_name(c.algorithm);
    row.protocol = models::protocol_name(c.protocol);
    row.channels = c.channels;
    rows.push_back(row);
  }
  return rows;
}

int command_collective(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  PlatformSettings platform_settings;
  std::string op = "allreduce", min_text = "8", max_text = "128M", fidelity = "packet";
  std::string algorithm = "auto", protocol = "auto", report, compare, dataset, svg, title, vcd;
  double factor = 2.0;
  int64_t gpus_per_node = 0, chunk_kib = 128, channels = 0;
  po::options_description desc("tessera collective [options]");
  desc.add_options()
      ("help,h", "this help")
      ("op,o", po::value(&op)->default_value("allreduce"), "allreduce, reducescatter, allgather, alltoall, broadcast, reduce, sendrecv")
      ("min-bytes,b", po::value(&min_text)->default_value("8"), "smallest size (K/M/G suffixes, K = 1024)")
      ("max-bytes,e", po::value(&max_text)->default_value("128M"), "largest size")
      ("step-factor,f", po::value(&factor)->default_value(2.0), "size multiplier between rows")
      ("gpus-per-node", po::value(&gpus_per_node), "GPUs of each node that take part, the first of each (nccl-tests' processes per node; default: all)")
      ("algorithm", po::value(&algorithm)->default_value("auto"), "ring, tree, direct, halving-doubling, hierarchical, nvls, collnet (InfiniBand SHARP), nvls_tree (NVLS in the node, a tree across nodes), auto")
      ("protocol", po::value(&protocol)->default_value("auto"), "simple, ll, ll128, auto")
      ("channels", po::value(&channels), "channels (default: the tuner's)")
      ("chunk-kib", po::value(&chunk_kib)->default_value(128), "largest fabric chunk, KiB")
      ("fidelity", po::value(&fidelity)->default_value("packet"), "packet or flow (docs/fidelity.md)")
      ("report", po::value(&report), "write the table as JSON to FILE")
      ("vcd", po::value(&vcd), "write the RTL blocks' pins and their ports' signals as a VCD waveform to FILE (docs/cosim.md)")
      ("compare", po::value(&compare), "a measured curve (CSV) to compare busbw with (a file with an op column: the rows of --op)")
      ("dataset", po::value(&dataset), "with --compare: the dataset of a file that holds several (its dataset column)")
      ("svg", po::value(&svg), "with --compare: plot simulated and measured busbw to FILE")
      ("title", po::value(&title), "plot title");
  desc.add(platform_options(platform_settings));
  WatchdogSettings watchdog;
  desc.add(watchdog_options(watchdog));
  po::variables_map vm;
  if (!parse_command_options(args, desc, out, vm)) return kOk;
  check_output_paths({{"--report", report}, {"--svg", svg}, {"--vcd", vcd}},
                     {{"--compare", compare}, {"--platform", platform_settings.platform}});
  check_watchdog_settings(watchdog);
  if (!compare.empty()) require_input_file(compare, "--compare");
  SweepSettings s;
  s.op = op;
  const bool sendrecv = is_sendrecv(op);
  if (!sendrecv) parse_op(op);
  s.min_bytes = parse_size(min_text, "min-bytes");
  s.max_bytes = parse_size(max_text, "max-bytes");
  if (s.max_bytes < s.min_bytes) throw InputError("--max-bytes is smaller than --min-bytes");
  check_option("--step-factor", factor, limits::Range{1, 1024, true});
  s.step_factor = factor;
  const double sizes = std::floor(std::log(double(s.max_bytes) / double(s.min_bytes)) / std::log(factor)) + 1;
  if (sizes > kMaxSweepRows)
    throw InputError("--step-factor " + limits::shown(factor) + ": " + limits::shown(sizes) + " sizes from --min-bytes to --max-bytes, more than the " +
                     std::to_string(kMaxSweepRows) + " a sweep may have");
  check_option("--chunk-kib", double(chunk_kib), limits::integers(1, limits::kMaxChunkKib));
  s.options.chunk_bytes = uint64_t(chunk_kib) * 1024;
  if (!platforms::parse_fidelity(fidelity, s.options.fidelity) || s.options.fidelity == platforms::Fidelity::Analytic)
    throw InputError("--fidelity: unknown fidelity '" + fidelity + "' (packet or flow)");
  if (!models::parse_algorithm(algorithm, s.options.collectives.algorithm))
    throw InputError("--algorithm: unknown algorithm '" + algorithm + "'");
  if (!models::parse_protocol(protocol, s.options.collectives.protocol))
    throw InputError("--protocol: unknown protocol '" + protocol + "'");
  if (vm.count("channels")) check_option("--channels", double(channels), limits::integers(1, 64));
  s.options.collectives.channels = int(channels);
  const platforms::PlatformConfig platform = build_platform(platform_settings, &s.options.topology);
  if (s.options.fidelity == platforms::Fidelity::Flow && platform.uses_rtl())
    throw InputError("--fidelity flow: the platform has RTL blocks at ports, which flow fidelity does not have (use packet)");
  if (!vcd.empty() && !platform.uses_rtl())
    throw InputError("--vcd: the run has no RTL block to trace (--rtl-arbiter, or an `arbiter: rtl` in the platform file; docs/cosim.md)");
  s.options.vcd = vcd;
  if (vm.count("gpus-per-node")) {
    check_option("--gpus-per-node", double(gpus_per_node), limits::integers(1, limits::kMaxGpusPerNode));
    if (gpus_per_node > platform.node.gpus)
      throw InputError("--gpus-per-node " + std::to_string(gpus_per_node) + ": a node of " + platform.name +
                       " has " + std::to_string(platform.node.gpus) + " GPUs");
    s.gpus_per_node = int(gpus_per_node);
  }
  const std::vector<int> members = sweep_members(platform, s.gpus_per_node);
  const int gpu_count = int(members.size());
  if (!svg.empty() && compare.empty()) throw InputError("--svg needs --compare");
  if (!dataset.empty() && compare.empty()) throw InputError("--dataset needs --compare");
  // The forced algorithm must be able to run the operation on this platform.
  if (sendrecv && (s.options.collectives.algorithm != models::CollectiveAlgorithm::Automatic ||
                   s.options.collectives.protocol != models::CollectiveProtocol::Automatic))
    throw InputError("--op sendrecv: point-to-point messages take no --algorithm or --protocol");
  if (!sendrecv) {
    const models::CollectiveEngineConfig& engine = s.options.collectives;
    models::Tuner tuner(engine.tuner, platforms::fabric_facts(platform));
    const std::string why = tuner.unsupported(models::collective_op(parse_op(op)), engine.algorithm,
                                              engine.protocol, world_shape(platform, engine, members));
    if (!why.empty()) throw InputError(why);
  }
  const double busbw_factor = calibration::bus_bandwidth_factor(op_name(op), gpu_count);
  calibration::MeasuredCurve measured;
  if (!compare.empty()) measured = calibration::read_measured_curve(compare, busbw_factor, {op, dataset});

  const std::vector<SweepRow> rows = [&] {
    const Watchdog guard(watchdog, expected_memory_bytes(platform.nodes, 0));
    return run_sweep(platform, s);
  }();

  auto measured_at = [&](uint64_t size) -> double {
    for (const auto& p : measured.points)
      if (p.size_bytes == size) return p.busbw_gbps;
    return -1;
  };
  out << "# tessera collective: " << op << " on " << platform.name << ", " << gpu_count << " GPUs";
  if (s.gpus_per_node > 0) out << " (" << platform.nodes << " nodes x " << s.gpus_per_node << ")";
  out << "\n";
  out << "#\n#" << std::setw(12) << "size" << std::setw(14) << "count" << std::setw(7) << "type"
      << std::setw(7) << "redop" << std::setw(6) << "root" << std::setw(11) << "time"
      << std::setw(9) << "algbw" << std::setw(9) << "busbw" << "  algorithm/protocol/channels";
  if (!compare.empty()) out << std::setw(10) << "measured" << std::setw(8) << "error";
  out << "\n#" << std::setw(12) << "(B)" << std::setw(14) << "(elements)" << std::setw(24) << ""
      << std::setw(11) << "(us)" << std::setw(9) << "(GB/s)" << std::setw(9) << "(GB/s)";
  if (!compare.empty()) out << std::setw(30) << "" << std::setw(10) << "(GB/s)";
  out << "\n";
  const std::string key = op_key(op);
  const bool rooted = key == "broadcast" || key == "reduce";
  nlohmann::ordered_json json;
  json["op"] = op;
  json["platform"] = platform.name;
  json["gpus"] = gpu_count;
  for (const SweepRow& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%13llu %13llu %6s %6s %5d %10.2f %8.2f %8.2f  %s/%s",
                  (unsigned long long)r.size_bytes, (unsigned long long)r.count, "float",
                  key == "allgather" || key == "alltoall" ? "none" : "sum", rooted ? 0 : -1,
                  r.time_us, r.algbw_gbps, r.busbw_gbps, r.algorithm.c_str(), r.protocol.c_str());
    out << line;
    if (r.channels > 0) out << "/" << r.channels;  // (point to point has no channel count)
    nlohmann::ordered_json j{{"size_bytes", r.size_bytes}, {"count", r.count},
                             {"time_us", r.time_us},       {"algbw_gbps", r.algbw_gbps},
                             {"busbw_gbps", r.busbw_gbps}, {"algorithm", r.algorithm},
                             {"protocol", r.protocol},     {"channels", r.channels}};
    const double m = measured_at(r.size_bytes);
    if (m > 0) {
      std::snprintf(line, sizeof line, "%10.2f %+7.1f%%", m, 100.0 * (r.busbw_gbps - m) / m);
      out << line;
      j["measured_busbw_gbps"] = m;
    }
    out << "\n";
    json["rows"].push_back(j);
  }
  if (!report.empty()) write_json_file(report, json);
  if (!svg.empty()) {
    calibration::Plot plot;
    plot.title = title.empty() ? op + " bus bandwidth, " + platform.name + ", " +
                                     std::to_string(gpu_count) + " GPUs"
                               : title;
    plot.x_label = "message size (bytes)";
    plot.y_label = "busbw (GB/s)";
    calibration::PlotSeries sim{"tessera (simulated)", "#1f77b4", false, {}, {}};
    calibration::PlotSeries meas{"measured (nccl-tests)", "#d62728", true, {}, {}};
    for (const SweepRow& r : rows) sim.x.push_back(double(r.size_bytes)), sim.y.push_back(r.busbw_gbps);
    for (const auto& p : measured.points)
      if (p.size_bytes >= s.min_bytes && p.size_bytes <= s.max_bytes)
        meas.x.push_back(double(p.size_bytes)), meas.y.push_back(p.busbw_gbps);
    plot.series = {sim, meas};
    write_output(svg, calibration::render_svg(plot));
  }
  return kOk;
}

}  // namespace tessera::app
