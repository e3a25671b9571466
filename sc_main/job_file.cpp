#include "sc_main/job_file.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "sc_main/input_error.h"
#include "workloads/limits.h"
#include "workloads/yaml_reader.h"

namespace tessera::app {

namespace {

// The job's model FLOPs are only reported: any finite amount up to 1e30.
constexpr double kMaxJobFlops = 1e30;

using workloads::Op;
using workloads::OpKind;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& problem) const {
    throw input_error(path_, node.Mark().line + 1, key, problem);
  }

  void only_keys(const YAML::Node& map, const std::string& where,
                 const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, where, "must be a mapping");
    for (const auto& kv : map) {
      const std::string k = kv.first.as<std::string>();
      if (!allowed.count(k)) fail(kv.first, where.empty() ? k : where + "." + k, "unknown key");
    }
  }

  // A value of type T in `range`: "must be a number, got 'x'" or the range's problem.
  template <typename T>
  T value(const YAML::Node& node, const std::string& key, const limits::Range& range) const {
    T v{};
    try {
      v = node.as<T>();
    } catch (const YAML::Exception&) {
      fail(node, key, std::string("must be ") + (range.integer ? "an integer" : "a number") + ", got '" +
                          scalar(node) + "'");
    }
    const std::string problem = limits::problem(double(v), range);
    if (!problem.empty()) fail(node, key, problem);
    return v;
  }

  // Work or size: finite, in [0, most] (or (0, most] when positive).
  double number(const YAML::Node& node, const std::string& key, bool positive, double most) const {
    return value<double>(node, key, positive ? limits::positive(most) : limits::non_negative(most));
  }

  int64_t integer(const YAML::Node& node, const std::string& key, int64_t lo = 0,
                  int64_t hi = limits::kMaxModelDimension) const {
    return value<int64_t>(node, key, limits::integers(lo, hi));
  }

  // Bytes a message moves: a whole number from 1 to 2^50 (written as an integer or as 1e6).
  uint64_t message_bytes(const YAML::Node& node, const std::string& key) const {
    return static_cast<uint64_t>(value<double>(node, key, limits::Range{1, limits::kMaxOpBytes, false, true}));
  }

  std::string text(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key, "must be a string");
    return node.as<std::string>();
  }

  static std::string scalar(const YAML::Node& node) {
    return node.IsScalar() ? node.as<std::string>() : std::string("(not a scalar)");
  }

 private:
  std::string path_;
};

// The collectives of one rank on one communicator, in program order.
std::vector<uint32_t> collectives_on(const workloads::Job& job, int rank, size_t communicator) {
  std::vector<uint32_t> calls;
  const workloads::Rank& r = job.ranks[rank];
  for (uint32_t i = 0; i < r.program->ops.size(); ++i) {
    const Op& op = r.program->ops[i];
    if (op.kind == OpKind::Collective && size_t(r.communicators[op.slot]) == communicator) calls.push_back(i);
  }
  return calls;
}

// Every member of a communicator calls its collectives in the same order, each of the same kind
// and size (as NCCL requires): a mismatch is a program no real job runs.
void check_collectives_agree(const workloads::Job& job, const std::vector<std::vector<int>>& lines,
                             const std::string& path) {
  for (size_t c = 0; c < job.communicators.size(); ++c) {
    const std::vector<int>& members = job.communicators[c].ranks;
    const std::vector<uint32_t> first = collectives_on(job, members[0], c);
    for (size_t m = 1; m < members.size(); ++m) {
      const std::vector<uint32_t> calls = collectives_on(job, members[m], c);
      for (size_t i = 0; i < std::min(first.size(), calls.size()); ++i) {
        const Op& a = job.ranks[members[0]].program->ops[first[i]];
        const Op& b = job.ranks[members[m]].program->ops[calls[i]];
        if (a.collective == b.collective && a.message_bytes == b.message_bytes) continue;
        auto call = [](const Op& op) {
          return std::string(workloads::to_string(op.collective)) + " of " + std::to_string(op.message_bytes) + " bytes";
        };
        throw input_error(path, lines[members[m]][calls[i]],
                          "ranks[" + std::to_string(members[m]) + "].ops[" + std::to_string(calls[i]) + "]",
                          "collective #" + std::to_string(i + 1) + " on '" + job.communicators[c].name + "' is " +
                              call(b) + ", but rank " + std::to_string(members[0]) + "'s is " + call(a) +
                              " (every member calls the same collectives in the same order and sizes)");
      }
    }
  }
}

}  // namespace

workloads::Job load_job_file(const std::string& path) {
  const YAML::Node root = workloads::parse_yaml(workloads::read_text_file(path), path);
  Reader in(path);
  if (!root.IsMap()) throw input_error(path, 1, "", "a job file is a mapping with 'ranks'");
  in.only_keys(root, "", {"name", "streams", "communicators", "ranks", "global_batch",
                          "seq_length", "model_flops"});

  workloads::Job job;
  job.info.model = root["name"] ? in.text(root["name"], "name") : "job";
  if (root["global_batch"]) job.info.global_batch = in.integer(root["global_batch"], "global_batch");
  if (root["seq_length"]) job.info.seq_length = in.integer(root["seq_length"], "seq_length");
  if (root["model_flops"]) job.info.model_flops = in.number(root["model_flops"], "model_flops", false, kMaxJobFlops);

  const YAML::Node ranks = root["ranks"];
  if (!ranks || !ranks.IsSequence() || ranks.size() == 0)
    in.fail(ranks ? ranks : root, "ranks", "must be a non-empty list of ranks");
  if (ranks.size() > size_t(limits::kMaxGpus))
    in.fail(ranks, "ranks", "has " + std::to_string(ranks.size()) + " ranks, more than the " +
                                std::to_string(limits::kMaxGpus) + " GPUs tessera builds");
  const int rank_count = static_cast<int>(ranks.size());

  std::map<std::string, uint16_t> streams;
  if (root["streams"]) {
    const YAML::Node s = root["streams"];
    if (!s.IsSequence()) in.fail(s, "streams", "must be a list of stream names");
    for (const auto& name : s) {
      const std::string n = in.text(name, "streams");
      if (streams.count(n)) in.fail(name, "streams", "stream '" + n + "' is named twice");
      streams[n] = static_cast<uint16_t>(job.stream_names.size());
      job.stream_names.push_back(n);
    }
  }
  std::map<std::string, int> communicators;
  if (root["communicators"]) {
    const YAML::Node c = root["communicators"];
    if (!c.IsMap()) in.fail(c, "communicators", "must map names to lists of ranks");
    for (const auto& kv : c) {
      const std::string name = kv.first.as<std::string>();
      const std::string key = "communicators." + name;
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        in.fail(kv.second, key, "must be a non-empty list of ranks");
      workloads::Communicator comm{name, {}};
      std::set<int64_t> seen;
      for (const auto& r : kv.second) {
        const int64_t rank = in.integer(r, key, 0, limits::kMaxGpus);
        if (rank < 0 || rank >= rank_count)
          in.fail(r, key, "rank " + std::to_string(rank) + " does not exist (the job has " +
                              std::to_string(rank_count) + " ranks)");
        if (!seen.insert(rank).second) in.fail(r, key, "rank " + std::to_string(rank) + " is listed twice");
        comm.ranks.push_back(static_cast<int>(rank));
      }
      communicators[name] = static_cast<int>(job.communicators.size());
      job.communicators.push_back(comm);
    }
  }

  const std::set<std::string> op_keys{"name", "kind", "stream", "deps", "flops", "bytes", "dtype",
                                      "phase", "gemm", "kernel", "communicator", "peer", "tag"};
  std::vector<std::vector<int>> op_lines(rank_count);  // for errors found after reading
  for (int r = 0; r < rank_count; ++r) {
    const YAML::Node rank_node = ranks[r];
    const std::string rk = "ranks[" + std::to_string(r) + "]";
    in.only_keys(rank_node, rk, {"ops"});
    const YAML::Node ops = rank_node["ops"];
    if (!ops || !ops.IsSequence()) in.fail(ops ? ops : rank_node, rk + ".ops", "must be a list of ops");
    auto program = std::make_shared<workloads::Program>();
    workloads::Rank rank;
    rank.rank = r;
    std::map<std::string, workloads::OpId> by_name;
    std::map<int, int> comm_slot, peer_slot;
    for (size_t i = 0; i < ops.size(); ++i) {
      const YAML::Node o = ops[i];
      const std::string ok = rk + ".ops[" + std::to_string(i) + "]";
      in.only_keys(o, ok, op_keys);
      Op op;
      const std::string name = o["name"] ? in.text(o["name"], ok + ".name") : "op" + std::to_string(i);
      op.name = job.intern(name);
      if (!o["kind"]) in.fail(o, ok + ".kind", "is missing");
      const std::string kind = in.text(o["kind"], ok + ".kind");
      const std::string stream = o["stream"] ? in.text(o["stream"], ok + ".stream")
                                             : (kind == "compute" || kind == "copy" ? "compute" : "comm");
      auto s = streams.find(stream);
      if (s == streams.end()) {
        if (root["streams"]) in.fail(o["stream"] ? o["stream"] : o, ok + ".stream", "unknown stream '" + stream + "'");
        s = streams.emplace(stream, static_cast<uint16_t>(job.stream_names.size())).first;
        job.stream_names.push_back(stream);
      }
      op.stream = s->second;
      if (o["dtype"] && !workloads::parse_dtype(in.text(o["dtype"], ok + ".dtype"), op.dtype))
        in.fail(o["dtype"], ok + ".dtype", "unknown dtype (fp32, tf32, fp16, bf16, fp8)");
      if (kind == "compute" || kind == "copy") {
        op.kind = kind == "compute" ? OpKind::Compute : OpKind::MemCopy;
        if (o["flops"]) op.flops = in.number(o["flops"], ok + ".flops", false, limits::kMaxOpFlops);
        if (o["bytes"]) op.bytes = in.number(o["bytes"], ok + ".bytes", false, limits::kMaxOpBytes);
        if (o["gemm"]) {
          const YAML::Node g = o["gemm"];
          if (!g.IsSequence() || g.size() != 3) in.fail(g, ok + ".gemm", "must be [m, n, k]");
          // (each at most 2^24: a GemmShape holds them in 32 bits, their products in double)
          const double m = double(in.integer(g[0], ok + ".gemm", 1)), n = double(in.integer(g[1], ok + ".gemm", 1)),
                       k = double(in.integer(g[2], ok + ".gemm", 1));
          op.gemm = {int32_t(m), int32_t(n), int32_t(k)};
          if (!op.gemm.valid()) in.fail(g, ok + ".gemm", "m, n and k must be positive");
          if (!o["flops"]) op.flops = 2.0 * m * n * k;
          if (!o["bytes"]) op.bytes = double(workloads::dtype_bytes(op.dtype)) * (m * k + k * n + m * n);
        }
        if (op.flops == 0 && op.bytes == 0)
          in.fail(o, ok, "a compute op needs flops, bytes or gemm");
        // What the compute model times it as: tensor-core work where it has FLOPs (they count
        // as model FLOPs), a memory-bound kernel where it only moves bytes.
        op.kernel = op.flops > 0 ? workloads::KernelKind::Gemm : workloads::KernelKind::Elementwise;
        if (o["kernel"] && !workloads::parse_kernel_kind(o["kernel"].as<std::string>(""), op.kernel))
          in.fail(o["kernel"], ok + ".kernel",
                  "unknown kernel kind '" + o["kernel"].as<std::string>("") +
                      "' (gemm, attention_gemm, flash_attention, norm, softmax, dropout, activation, "
                      "bias, residual, rotary, embedding, cross_entropy, moe_routing, optimizer, "
                      "framework, elementwise)");
        op.matmul = workloads::is_matmul(op.kernel);
      } else if (kind == "send" || kind == "recv") {
        op.kind = kind == "send" ? OpKind::Send : OpKind::Recv;
        if (!o["peer"]) in.fail(o, ok + ".peer", "is missing");
        const int64_t peer = in.integer(o["peer"], ok + ".peer", 0, limits::kMaxGpus);
        if (peer < 0 || peer >= rank_count || peer == r)
          in.fail(o["peer"], ok + ".peer", "rank " + std::to_string(peer) + " is not another rank of the job");
        if (!o["bytes"]) in.fail(o, ok + ".bytes", "is missing");
        op.message_bytes = in.message_bytes(o["bytes"], ok + ".bytes");
        op.tag = o["tag"] ? static_cast<uint32_t>(in.integer(o["tag"], ok + ".tag", 0, UINT32_MAX)) : 0;
        auto slot = peer_slot.emplace(int(peer), int(rank.peers.size()));
        if (slot.second) rank.peers.push_back(int(peer));
        op.slot = slot.first->second;
      } else {
        op.kind = OpKind::Collective;
        if (!workloads::parse_collective_kind(kind, op.collective))
          in.fail(o["kind"], ok + ".kind",
                  "unknown kind '" + kind + "' (compute, copy, send, recv, allreduce, "
                  "reducescatter, allgather, alltoall, broadcast, reduce, barrier)");
        if (!o["communicator"]) in.fail(o, ok + ".communicator", "is missing");
        const std::string cname = in.text(o["communicator"], ok + ".communicator");
        auto c = communicators.find(cname);
        if (c == communicators.end())
          in.fail(o["communicator"], ok + ".communicator", "unknown communicator '" + cname + "'");
        const auto& members = job.communicators[c->second].ranks;
        if (std::find(members.begin(), members.end(), r) == members.end())
          in.fail(o["communicator"], ok + ".communicator",
                  "rank " + std::to_string(r) + " is not a member of '" + cname + "'");
        if (op.collective == workloads::CollectiveKind::Barrier) {
          op.message_bytes = o["bytes"] ? in.message_bytes(o["bytes"], ok + ".bytes") : 8;
        } else {
          if (!o["bytes"]) in.fail(o, ok + ".bytes", "is missing");
          op.message_bytes = in.message_bytes(o["bytes"], ok + ".bytes");
        }
        auto slot = comm_slot.emplace(c->second, int(rank.communicators.size()));
        if (slot.second) rank.communicators.push_back(c->second);
        op.slot = slot.first->second;
      }
      if (o["deps"]) {
        const YAML::Node d = o["deps"];
        if (!d.IsSequence()) in.fail(d, ok + ".deps", "must be a list of earlier op names");
        for (const auto& dep : d) {
          const std::string dn = in.text(dep, ok + ".deps");
          auto it = by_name.find(dn);
          if (it == by_name.end())
            in.fail(dep, ok + ".deps", "'" + dn + "' is not an earlier op of this rank");
          op.deps.push_back(it->second);
        }
      }
      by_name[name] = static_cast<workloads::OpId>(program->ops.size());
      program->ops.push_back(std::move(op));
      op_lines[r].push_back(o.Mark().line + 1);
    }
    rank.program = program;
    job.ranks.push_back(std::move(rank));
  }
  for (const auto& rank : job.ranks)
    for (const auto& op : rank.program->ops)
      if (op.kind == OpKind::Compute) job.info.hardware_flops += op.flops;
  if (job.info.model_flops == 0) job.info.model_flops = job.info.hardware_flops;
  check_collectives_agree(job, op_lines, path);
  return job;
}

}  // namespace tessera::app
