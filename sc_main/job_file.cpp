#include "sc_main/job_file.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "sc_main/input_error.h"

namespace tessera::app {

InputError input_error(const std::string& file, int line, const std::string& key,
                       const std::string& problem) {
  std::string text = file;
  if (line > 0) text += ":" + std::to_string(line);
  text += ": ";
  if (!key.empty()) text += "key '" + key + "': ";
  return InputError(text + problem);
}

namespace {

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

  double number(const YAML::Node& node, const std::string& key, bool positive) const {
    double v;
    try {
      v = node.as<double>();
    } catch (const YAML::Exception&) {
      fail(node, key, "must be a number, got '" + scalar(node) + "'");
    }
    if (v < 0 || (positive && v == 0))
      fail(node, key, std::string("must be ") + (positive ? "positive" : "non-negative") +
                          ", got " + scalar(node));
    return v;
  }

  int64_t integer(const YAML::Node& node, const std::string& key) const {
    try {
      return node.as<int64_t>();
    } catch (const YAML::Exception&) {
      fail(node, key, "must be an integer, got '" + scalar(node) + "'");
    }
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

}  // namespace

workloads::Job load_job_file(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) throw InputError(path + ": cannot read job file");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::ParserException& e) {
    throw input_error(path, e.mark.line + 1, "", "syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": cannot read job file: " + e.what());
  }
  Reader in(path);
  if (!root.IsMap()) throw input_error(path, 1, "", "a job file is a mapping with 'ranks'");
  in.only_keys(root, "", {"name", "streams", "communicators", "ranks", "global_batch",
                          "seq_length", "model_flops"});

  workloads::Job job;
  job.info.model = root["name"] ? in.text(root["name"], "name") : "job";
  if (root["global_batch"]) job.info.global_batch = in.integer(root["global_batch"], "global_batch");
  if (root["seq_length"]) job.info.seq_length = in.integer(root["seq_length"], "seq_length");
  if (root["model_flops"]) job.info.model_flops = in.number(root["model_flops"], "model_flops", false);

  const YAML::Node ranks = root["ranks"];
  if (!ranks || !ranks.IsSequence() || ranks.size() == 0)
    in.fail(ranks ? ranks : root, "ranks", "must be a non-empty list of ranks");
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
        const int64_t rank = in.integer(r, key);
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
        if (root["streams"]) in.fail(o["stream"], ok + ".stream", "unknown stream '" + stream + "'");
        s = streams.emplace(stream, static_cast<uint16_t>(job.stream_names.size())).first;
        job.stream_names.push_back(stream);
      }
      op.stream = s->second;
      if (o["dtype"] && !workloads::parse_dtype(in.text(o["dtype"], ok + ".dtype"), op.dtype))
        in.fail(o["dtype"], ok + ".dtype", "unknown dtype (fp32, tf32, fp16, bf16, fp8)");
      if (kind == "compute" || kind == "copy") {
        op.kind = kind == "compute" ? OpKind::Compute : OpKind::MemCopy;
        if (o["flops"]) op.flops = in.number(o["flops"], ok + ".flops", false);
        if (o["bytes"]) op.bytes = in.number(o["bytes"], ok + ".bytes", false);
        if (o["gemm"]) {
          const YAML::Node g = o["gemm"];
          if (!g.IsSequence() || g.size() != 3) in.fail(g, ok + ".gemm", "must be [m, n, k]");
          op.gemm = {in.integer(g[0], ok + ".gemm"), in.integer(g[1], ok + ".gemm"),
                     in.integer(g[2], ok + ".gemm")};
          if (!op.gemm.valid()) in.fail(g, ok + ".gemm", "m, n and k must be positive");
          if (!o["flops"]) op.flops = 2.0 * op.gemm.m * op.gemm.n * op.gemm.k;
          if (!o["bytes"])
            op.bytes = double(workloads::dtype_bytes(op.dtype)) *
                       double(op.gemm.m * op.gemm.k + op.gemm.k * op.gemm.n + op.gemm.m * op.gemm.n);
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
        op.matmul = op.kernel == workloads::KernelKind::Gemm ||
                    op.kernel == workloads::KernelKind::AttentionGemm ||
                    op.kernel == workloads::KernelKind::FlashAttention;
      } else if (kind == "send" || kind == "recv") {
        op.kind = kind == "send" ? OpKind::Send : OpKind::Recv;
        if (!o["peer"]) in.fail(o, ok + ".peer", "is missing");
        const int64_t peer = in.integer(o["peer"], ok + ".peer");
        if (peer < 0 || peer >= rank_count || peer == r)
          in.fail(o["peer"], ok + ".peer", "rank " + std::to_string(peer) + " is not another rank of the job");
        if (!o["bytes"]) in.fail(o, ok + ".bytes", "is missing");
        op.message_bytes = static_cast<uint64_t>(in.number(o["bytes"], ok + ".bytes", true));
        op.tag = o["tag"] ? static_cast<uint32_t>(in.integer(o["tag"], ok + ".tag")) : 0;
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
          op.message_bytes = o["bytes"] ? static_cast<uint64_t>(in.number(o["bytes"], ok + ".bytes", true)) : 8;
        } else {
          if (!o["bytes"]) in.fail(o, ok + ".bytes", "is missing");
          op.message_bytes = static_cast<uint64_t>(in.number(o["bytes"], ok + ".bytes", true));
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
    }
    rank.program = program;
    job.ranks.push_back(std::move(rank));
  }
  for (const auto& rank : job.ranks)
    for (const auto& op : rank.program->ops)
      if (op.kind == OpKind::Compute) job.info.hardware_flops += op.flops;
  if (job.info.model_flops == 0) job.info.model_flops = job.info.hardware_flops;
  return job;
}

}  // namespace tessera::app
