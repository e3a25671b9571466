#include "analytic/symbolic.h"

#include <map>
#include <tuple>

#include "analytic/op_costs.h"
#include "platforms/platform.h"

namespace tessera::analytic {
namespace {

using workloads::OpKind;

bool matmul(workloads::KernelKind k) {
  return k == workloads::KernelKind::Gemm || k == workloads::KernelKind::AttentionGemm ||
         k == workloads::KernelKind::FlashAttention;
}

// The hardware rates a path op is bound by.
struct Rates {
  const platforms::PlatformConfig& platform;
  models::FabricFacts facts;
  int gpus_per_node;
  bool same_node(const std::vector<int>& ranks) const {
    for (int r : ranks)
      if (r / gpus_per_node != ranks.front() / gpus_per_node) return false;
    return true;
  }
};

// The term of one op of the path (its work filled in).
SymbolicTerm term_of(const workloads::Job& job, const workloads::Rank& rank, const workloads::Op& op,
                     const Rates& rates) {
  SymbolicTerm t;
  t.ops = 1;
  if (op.kind == OpKind::Compute || op.kind == OpKind::MemCopy) {
    t.cause = models::compute_cause(op.phase);
    if (op.kind == OpKind::Compute && matmul(op.kernel)) {
      t.what = std::string("matmul ") + workloads::to_string(op.dtype);
      t.parameter = std::string("peak_") + workloads::to_string(op.dtype);
      t.parameter_value = rates.platform.gpu.peak_tflops[size_t(op.dtype)] * 1e12;
      t.work_unit = "FLOP";
      t.work = op.flops;
    } else {
      t.what = op.kind == OpKind::MemCopy ? "copy" : "memory-bound";
      t.parameter = "hbm";
      t.parameter_value = rates.platform.gpu.hbm_bandwidth_gbps * 1e9;
      t.work_unit = "B";
      t.work = op.kind == OpKind::MemCopy ? 2 * op.bytes : op.bytes;
    }
    return t;
  }
  std::vector<int> ranks;
  if (op.kind == OpKind::Collective) {
    const workloads::Communicator& c = job.communicators[size_t(rank.communicators[size_t(op.slot)])];
    t.cause = models::communicator_cause(c.name);
    ranks = c.ranks;
    t.what = workloads::to_string(op.collective);
    t.work = member_bytes(op.collective, double(op.message_bytes), static_cast<int>(ranks.size()));
  } else {
    t.cause = models::TimeCause::PipelineBubble;
    ranks = {rank.rank, rank.peers[size_t(op.slot)]};
    t.what = "stage transfer";
    t.work = double(op.message_bytes);
  }
  const bool inside = rates.same_node(ranks);
  t.what += inside ? " in a node" : " across nodes";
  t.parameter = inside ? "nvlink" : "nic";
  t.parameter_value = inside ? rates.facts.gpu_bandwidth : rates.facts.gpu_network_bandwidth;
  t.work_unit = "B";
  return t;
}

}  // namespace

double SymbolicTerm::efficiency() const {
  return parameter_value > 0 && seconds > 0 ? work / (parameter_value * seconds) : 0;
}

double SymbolicTerm::value() const {
  const double eta = efficiency();
  return eta > 0 ? work / (eta * parameter_value) : seconds;
}

SymbolicForm symbolic_form(const AnalyticResult& result, const workloads::Job& job,
                           const platforms::PlatformConfig& platform) {
  const Rates rates{platform, platforms::fabric_facts(platform), std::max(1, platform.node.gpus)};
  SymbolicForm form;
  std::map<std::tuple<int, std::string>, size_t> index;
  for (const PathSegment& seg : result.critical_path) {
    const double seconds = seg.end_s - seg.start_s;
    if (seconds <= 0) continue;  // ended when the op before it did
    const workloads::Rank& rank = job.ranks[size_t(seg.rank)];
    SymbolicTerm t = term_of(job, rank, rank.program->ops[seg.op], rates);
    if (t.work <= 0 || t.parameter_value <= 0) {  // nothing to be bound by: a latency
      t.parameter = "latency";
      t.parameter_value = 0;
      t.work = 0;
    }
    t.seconds = seconds;
    const auto key = std::make_tuple(int(t.cause), t.what + "|" + t.parameter);
    auto [it, inserted] = index.emplace(key, form.terms.size());
    if (inserted) {
      form.terms.push_back(t);
      continue;
    }
    SymbolicTerm& sum = form.terms[it->second];
    sum.work += t.work;
    sum.seconds += t.seconds;
    sum.ops += 1;
  }
  for (const SymbolicTerm& t : form.terms) form.value_s += t.value();
  return form;
}

}  // namespace tessera::analytic
