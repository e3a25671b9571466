#include "analytic/op_costs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/gpu/command_processor.h"
#include "models/gpu/compute_engine.h"
#include "platforms/platform.h"

namespace tessera::analytic {
namespace {

models::TunerConfig tuner_config(const models::CollectiveEngineConfig& c) {
  models::TunerConfig t = c.tuner;
  t.chunk_bytes = c.chunk_bytes;
  return t;
}

int engine_gpus_per_node(const models::CollectiveEngineConfig& c, const platforms::PlatformConfig& p) {
  return c.gpus_per_node > 0 ? c.gpus_per_node : p.node.gpus;
}

}  // namespace

double member_bytes(workloads::CollectiveKind kind, double bytes, int n) {
  using workloads::CollectiveKind;
  if (n <= 1) return 0;
  const double share = double(n - 1) / n * bytes;
  switch (kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::Barrier: return 2 * share;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return bytes;
    default: return share;
  }
}

OpCosts::OpCosts(const platforms::PlatformConfig& platform, const platforms::RoutedTopology& topology,
                 const workloads::Job& job, const CostOptions& options)
    : platform_(platform), job_(job), options_(options),
      tuner_(tuner_config(options.collectives), platforms::fabric_facts(platform)),
      paths_(topology.graph, topology.routing,
             sc_core::sc_time(platform.node.nics.message_overhead_ns, sc_core::SC_NS)),
      links_(paths_.links()) {
  const int g = engine_gpus_per_node(options.collectives, platform);
  shapes_.reserve(job.communicators.size());
  for (const workloads::Communicator& c : job.communicators)
    shapes_.push_back(models::communicator_shape(c.ranks, g, options.collectives.dimensions,
                                                 tuner_.fabric().gpus_per_node));
}

size_t OpCosts::WorkHash::operator()(const std::vector<double>& v) const {
  size_t h = v.size();
  for (double x : v) h = h * 1000003u ^ std::hash<double>()(x);
  return h;
}

size_t OpCosts::WorkHash::operator()(const KernelWork& w) const {
  size_t h = std::hash<double>()(w.flops) * 1000003u ^ std::hash<double>()(w.bytes);
  for (int64_t x : {w.m, w.n, w.k, w.batch, w.elements, int64_t(w.kernels), int64_t(w.kernel) << 8 | w.dtype})
    h = h * 1000003u ^ std::hash<int64_t>()(x);
  return h;
}

uint32_t OpCosts::compute(const workloads::Rank& rank, uint32_t index) {
  const workloads::Op& op = rank.program->ops[index];
  const KernelWork work{op.flops, op.bytes, op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch, op.elements,
                        op.kernels, static_cast<uint8_t>(op.kernel), static_cast<uint8_t>(op.dtype)};
  if (by_name_.size() < job_.names.size()) by_name_.resize(job_.names.size());
  Named& named = by_name_[op.name];
  if (named.known && named.work == work) return named.id;
  auto known = kernels_.find(work);
  if (known == kernels_.end()) {
    protocol::ComputeEvent e;
    models::fill_compute_event(e, job_, rank.rank, index, op);
    const models::KernelTime t = options_.kernel_timer
                                     ? options_.kernel_timer->kernel_time(e)
                                     : models::KernelTime{models::roofline_seconds(platform_.gpu, e, false), 0};
    known = kernels_.emplace(work, static_cast<uint32_t>(kernel_times_.size())).first;
    kernel_times_.push_back(t);
  }
  named = Named{work, known->second, true};
  return known->second;
}

double OpCosts::copy(const workloads::Rank& rank, uint32_t index) const {
  protocol::ComputeEvent e;
  models::fill_compute_event(e, job_, rank.rank, index, rank.program->ops[index]);
  return models::roofline_seconds(platform_.gpu, e, true);
}

CollectiveCost OpCosts::collective(const workloads::Rank& rank, const workloads::Op& op) {
  const int communicator = rank.communicators[size_t(op.slot)];
  key_.assign({double(communicator), double(op.collective), double(op.message_bytes), double(op.algorithm)});
  auto known = collectives_.find(key_);
  if (known != collectives_.end()) return known->second;
  const models::CommunicatorShape& shape = shapes_[size_t(communicator)];
  const models::CollectiveOp kind = models::collective_op(op.collective);
  models::CollectiveAlgorithm a;
  models::CollectiveProtocol p;
  models::op_algorithm_choice(job_, op, a, p);  // (every collective of every distinct program comes here)
  const models::CollectiveEngineConfig& engine = options_.collectives;
  const models::Choice choice =
      models::choose_call(tuner_, kind, op.message_bytes, shape, a, p, engine.algorithm, engine.protocol, engine.channels);
  CollectiveCost c;
  c.channels = choice.channels;
  c.launch_s = tuner_.cost(choice.algorithm, choice.protocol).launch_us * 1e-6 +
               tuner_.ring_fill(kind, choice.algorithm, choice.protocol, op.message_bytes, shape);
  c.seconds = shape.ranks > 1 ? std::max(choice.predicted_s, c.launch_s) : c.launch_s;
  c.member_bytes = member_bytes(op.collective, double(op.message_bytes), shape.ranks);
  collectives_.emplace(key_, c);
  return c;
}

const OpCosts::LinkCost& OpCosts::link(uint32_t id) {
  LinkCost& l = links_[id];
  if (l.latency_s < 0) {
    const models::FlowLink f = paths_.link(id);
    l.timing = f.timing;
    l.latency_s = (f.timing.latency + f.hop_latency).to_seconds();
  }
  return l;
}

TransferCost OpCosts::transfer(int source, int destination, uint64_t bytes, uint32_t tag) {
  protocol::FabricTransfer t;
  t.source = static_cast<uint32_t>(source);
  t.destination = static_cast<uint32_t>(destination);
  t.bytes = bytes;
  t.flow = (uint64_t(uint32_t(destination)) << 32) | tag;  // as the engine keys a message
  t.step = tag;
  t.purpose = protocol::TransferPurpose::PointToPoint;
  paths_.path(t, path_, shares_);
  TransferCost c;
  double rate = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < path_.size(); ++i) {
    const LinkCost& l = link(path_[i]);
    // A link carrying a share of the bytes (spread over equal-cost paths) limits the whole
    // transfer to its bandwidth over that share; latency is the paths' mean.
    const double share = models::PathProvider::share(shares_, i);
    c.latency_s += share * l.latency_s;
    const double wire = l.timing.wire_bytes(bytes);
    if (wire > 0)
      rate = std::min(rate, l.timing.bandwidth_bytes_per_s * double(std::max<uint64_t>(bytes, 1)) / (wire * share));
  }
  // NCCL's channels for the message (Tuner::p2p_plan): at most their rate to a peer in the
  // node, and the receiver's copy of the last chunk before the receive completes.
  const int node = tuner_.fabric().gpus_per_node;
  const bool across = node > 0 && source / node != destination / node;
  const models::P2pPlan plan = tuner_.p2p_plan(bytes, job_.p2p_ranks, across);
  if (plan.rate > 0) rate = std::min(rate, plan.rate);
  c.latency_s += plan.drain_s;
  if (std::isfinite(rate) && rate > 0) c.serialization_s = double(bytes) / rate;
  return c;
}

}  // namespace tessera::analytic
