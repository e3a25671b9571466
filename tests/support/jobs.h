// Small jobs with closed-form answers, built in code for scenario tests.
#pragma once

#include <memory>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platforms/platform.h"
#include "platforms/platform_file.h"
#include "sc_main/simulation.h"
#include "workloads/program.h"

namespace tessera::testing {

// Builds one rank's program op by op.
class ProgramBuilder {
 public:
  ProgramBuilder(workloads::Job& job, int rank) : job_(job) {
    rank_.rank = rank;
    program_ = std::make_shared<workloads::Program>();
  }
  uint16_t stream(const std::string& name) { return job_.intern_stream(name); }
  workloads::OpId compute(const std::string& name, const std::string& s, double flops,
                          double bytes, std::vector<workloads::OpId> deps = {}) {
    workloads::Op op;
    op.kind = workloads::OpKind::Compute;
    op.flops = flops;
    op.bytes = bytes;
    return add(name, s, op, deps);
  }
  workloads::OpId collective(const std::string& name, const std::string& s,
                             workloads::CollectiveKind kind, int communicator, uint64_t bytes,
                             std::vector<workloads::OpId> deps = {}) {
    workloads::Op op;
    op.kind = workloads::OpKind::Collective;
    op.collective = kind;
    op.message_bytes = bytes;
    op.slot = slot(rank_.communicators, communicator);
    return add(name, s, op, deps);
  }
  workloads::OpId p2p(bool send, const std::string& name, const std::string& s, int peer,
                      uint64_t bytes, uint32_t tag, std::vector<workloads::OpId> deps = {}) {
    workloads::Op op;
    op.kind = send ? workloads::OpKind::Send : workloads::OpKind::Recv;
    op.message_bytes = bytes;
    op.tag = tag;
    op.slot = slot(rank_.peers, peer);
    return add(name, s, op, deps);
  }
  void finish() {
    rank_.program = program_;
    job_.ranks.push_back(rank_);
  }

 private:
  static int slot(std::vector<int>& table, int value) {
    for (size_t i = 0; i < table.size(); ++i)
      if (table[i] == value) return static_cast<int>(i);
    table.push_back(value);
    return static_cast<int>(table.size() - 1);
  }
  workloads::OpId add(const std::string& name, const std::string& s, workloads::Op op,
                      std::vector<workloads::OpId> deps) {
    op.name = job_.intern(name);
    op.stream = stream(s);
    op.deps.assign(deps.begin(), deps.end());
    program_->ops.push_back(op);
    return static_cast<workloads::OpId>(program_->ops.size() - 1);
  }
  workloads::Job& job_;
  workloads::Rank rank_;
  std::shared_ptr<workloads::Program> program_;
};

// n ranks, each issuing one collective of `bytes` on a communicator of all ranks.
inline workloads::Job one_collective(int n, workloads::CollectiveKind kind, uint64_t bytes) {
  workloads::Job job;
  workloads::Communicator all{"world", {}};
  for (int r = 0; r < n; ++r) all.ranks.push_back(r);
  job.communicators.push_back(all);
  for (int r = 0; r < n; ++r) {
    ProgramBuilder b(job, r);
    b.collective("collective", "comm", kind, 0, bytes);
    b.finish();
  }
  return job;
}

// Every (source, destination) pair sends `bytes` at once (one message); the other ranks idle.
inline workloads::Job transfers(int ranks, const std::vector<std::pair<int, int>>& pairs, uint64_t bytes) {
  workloads::Job job;
  for (int r = 0; r < ranks; ++r) {
    ProgramBuilder b(job, r);
    bool busy = false;
    for (const auto& [s, d] : pairs) {
      if (s == r) b.p2p(true, "send_to_" + std::to_string(d), "send" + std::to_string(d), d, bytes, 1);
      if (d == r) b.p2p(false, "recv_from_" + std::to_string(s), "recv" + std::to_string(s), s, bytes, 1);
      busy = busy || s == r || d == r;
    }
    if (!busy) b.compute("idle", "compute", 0, 1);
    b.finish();
  }
  return job;
}

// A platform with an ideal fabric: no packet overhead, so B is the link bandwidth.
// One node, one NVSwitch, one link of link_gbps per GPU, no NICs or network.
inline platforms::PlatformConfig ideal_node(int gpus, double link_gbps = 450.0) {
  platforms::PlatformConfig p = platforms::load_platform("dgx-h100");
  p.node.gpus = gpus;
  p.gpu.nvlink_ports = 1;
  p.gpu.nvlink_port_bandwidth_gbps = link_gbps;
  p.node.nvlink.switches = 1;
  p.node.nvlink.links_per_switch = {1};
  p.node.nvlink.link.bandwidth_gb_per_s = link_gbps;
  p.node.nvlink.link.packet_overhead_bytes = 0;
  p.gpu.simple_handshake_us = 0;
  p.gpu.p2p_channel_gbps = 0;
  p.node.pcie.switches = 1;
  p.node.nics.count = 0;
  p.network.topology = platforms::Topology::None;
  return p;
}

// An engine that runs `algorithm` with the simple protocol and no launch or step latency, so
// times are the fabric's closed forms.
inline models::CollectiveEngineConfig ideal_collectives(models::CollectiveAlgorithm algorithm,
                                                        int gpus_per_node = 0) {
  models::CollectiveEngineConfig c;
  c.algorithm = algorithm;
  c.protocol = models::CollectiveProtocol::Simple;
  c.protocol_latencies = false;
  c.gpus_per_node = gpus_per_node;
  return c;
}

inline nlohmann::json summarize(const app::SimulationResult& r) {
  nlohmann::json j;
  j["iteration_time_s"] = r.iteration_time_s;
  j["deadlocked"] = r.deadlocked;
  j["deadlock"] = r.deadlocked ? app::describe_deadlock(r) : "";
  j["transactions"] = r.transactions;
  for (const auto& rank : r.ranks) {
    j["finish_s"].push_back(rank.finish_s);
    j["sent"].push_back(rank.bytes_sent);
    j["received"].push_back(rank.bytes_received);
    j["compute_s"].push_back(rank.compute_s);
    j["exposed_s"].push_back(rank.exposed_communication_s);
    nlohmann::json spans = nlohmann::json::array();
    for (const auto& s : rank.spans)
      spans.push_back({{"op", s.op}, {"start", s.start.to_seconds()}, {"end", s.end.to_seconds()}});
    j["spans"].push_back(spans);
  }
  uint64_t link_bytes = 0;
  for (const auto& l : r.links) {
    link_bytes += l.bytes;
    j["link_bytes"][l.name] = l.bytes;
  }
  j["total_link_bytes"] = link_bytes;
  return j;
}

}  // namespace tessera::testing
