#include "analytic/symbolic.h"

#include <algorithm>
#include <cmath>
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

using TermKey = std::tuple<int, std::string>;
TermKey key_of(const SymbolicTerm& t) { return {int(t.cause), t.what + "|" + t.parameter}; }

// 'f', 'b', 'r' for the phases of a layer pass, 0 for the others.
char phase_group(workloads::ComputePhase phase) {
  switch (phase) {
    case workloads::ComputePhase::Forward: return 'f';
    case workloads::ComputePhase::BackwardInput:
    case workloads::ComputePhase::BackwardWeight: return 'b';
    case workloads::ComputePhase::Recompute: return 'r';
    default: return 0;
  }
}

// The transformer layer an op belongs to, from its name ("layer12.qkv.fwd": 12), -1 if none.
class LayerOfName {
 public:
  explicit LayerOfName(const workloads::Job& job) : job_(job), layer_(job.names.size(), -2) {}
  int operator()(uint32_t name) {
    int& l = layer_[name];
    if (l != -2) return l;
    const std::string& n = job_.names[name];
    l = -1;
    if (n.compare(0, 5, "layer") != 0) return l;
    size_t i = 5;
    int v = 0;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9' && i < 14) v = v * 10 + (n[i++] - '0');
    if (i > 5 && i < n.size() && n[i] == '.') l = v;
    return l;
  }

 private:
  const workloads::Job& job_;
  std::vector<int> layer_;
};

// The work of term `key` in the layer pass of `op` (its layer, micro-batch and phase) on `rank`.
double pass_unit(const workloads::Job& job, const workloads::Rank& rank, const workloads::Op& op, const TermKey& key,
                 const Rates& rates, LayerOfName& layer_of) {
  const int layer = layer_of(op.name);
  const char group = phase_group(op.phase);
  double unit = 0;
  for (const workloads::Op& o : rank.program->ops) {
    if (o.micro_batch != op.micro_batch || phase_group(o.phase) != group || layer_of(o.name) != layer) continue;
    const SymbolicTerm t = term_of(job, rank, o, rates);
    if (key_of(t) == key) unit += t.work;
  }
  return unit;
}

// `value` as `multiple` x `of` where multiple is a whole number (within rounding).
bool whole_multiple(double value, double of, double& multiple) {
  if (!(of > 0)) return false;
  multiple = std::round(value / of);
  return multiple >= 1 && std::fabs(value - multiple * of) <= 1e-9 * value;
}

// The formulas of a term's layer passes, where they hold.
void name_passes(SymbolicTerm& t, const WorkloadSymbols& symbols) {
  const SymbolValues& v = symbols.values;
  const double L = symbols.layer_passes.evaluate(v);
  for (LayerPasses& lp : t.layers) {
    if (!symbols.layer_passes.empty() && std::fabs(lp.passes - L) <= 1e-9 * L)
      lp.passes_formula = Formula(monomial(1, {{"L", 1}}));
    double k = 0;
    if (t.work_unit == "FLOP" && !symbols.layer_forward_flops.empty() && whole_multiple(lp.unit, v.at("F_f"), k)) {
      lp.unit_formula = Formula(monomial(k, {{"F_f", 1}}));
    } else if (t.cause == models::TimeCause::TensorParallel && !symbols.activation_bytes.empty()) {
      const double tp = v.at("t");
      if (tp > 1 && whole_multiple(lp.unit, v.at("A") * (1 - 1 / tp), k))
        lp.unit_formula = Formula(monomial(k, {{"A", 1}})).times(Formula(polynomial({monomial(1), monomial(-1, {{"t", -1}})})));
    }
  }
}

}  // namespace

WorkloadSymbols workload_symbols(const workloads::ModelSpec& model, const workloads::ResolvedStrategy& r) {
  WorkloadSymbols w;
  auto set = [&](const char* name, double value) {
    w.values[name] = value;
    w.order.push_back(name);
  };
  set("b", double(r.s.micro_batch));
  set("s", double(model.seq_length));
  set("h", double(model.hidden));
  set("layers", double(model.layers));
  set("t", double(r.s.tp));
  set("p", double(r.s.pp));
  set("d", double(r.s.dp));
  set("v", double(r.s.vpp));
  set("m", double(r.micro_batches));
  if (r.s.cp > 1) set("c", double(r.s.cp));
  set("e", double(workloads::dtype_bytes(r.s.dtype)));
  if (r.s.pp == 1 && r.s.vpp == 1) {
    w.layer_passes = Formula(monomial(1, {{"m", 1}, {"layers", 1}}));
  } else {
    w.layer_passes = Formula(polynomial({monomial(1, {{"m", 1}, {"v", 1}}), monomial(1, {{"p", 1}}), monomial(-1)}))
                         .times(Formula(monomial(1, {{"layers", 1}, {"p", -1}, {"v", -1}})));
  }
  // Tokens of a micro-batch on one GPU: b s (/ c), and the division by t.
  std::vector<std::pair<std::string, int>> tokens = {{"b", 1}, {"s", 1}};
  std::vector<std::pair<std::string, int>> per_gpu = {{"t", -1}};
  if (r.s.cp > 1) per_gpu.insert(per_gpu.begin(), {"c", -1});
  auto with = [](std::vector<std::pair<std::string, int>> a, const std::vector<std::pair<std::string, int>>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::vector<std::pair<std::string, int>> activation = with(tokens, {{"h", 1}, {"e", 1}});
  if (r.s.cp > 1) activation.push_back({"c", -1});
  w.activation_bytes = Formula(monomial(1, activation));
  w.values["A"] = w.activation_bytes.evaluate(w.values);
  w.values["L"] = w.layer_passes.evaluate(w.values);
  if (model.is_moe() || model.architecture == workloads::Architecture::Generic) return w;
  // F_f = [2 b s h (2 h + 2 h_kv + k f) + 4 b s^2 h] / t: Q and the projection, K and V, the MLP
  // (k = 2 matrices of f, 3 for SwiGLU), the attention core counted in full (docs/workloads.md).
  const int64_t heads = model.heads, kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
  const int64_t ffn = model.ffn_hidden > 0 ? model.ffn_hidden : 4 * model.hidden;
  const double k = model.mlp == workloads::MlpKind::SwiGLU ? 3 : 2;
  double h2 = 4;  // coefficient of b s h^2 / t
  std::vector<Monomial> terms;
  if (kv == heads) h2 += 4;
  else set("h_kv", double(model.hidden) * double(kv) / double(heads));
  if (ffn == 4 * model.hidden) h2 += 8 * k;
  else set("f", double(ffn));
  terms.push_back(monomial(h2, with(with(tokens, {{"h", 2}}), per_gpu)));
  if (kv != heads) terms.push_back(monomial(4, with(with(tokens, {{"h", 1}, {"h_kv", 1}}), per_gpu)));
  if (ffn != 4 * model.hidden) terms.push_back(monomial(2 * k, with(with(tokens, {{"h", 1}, {"f", 1}}), per_gpu)));
  terms.push_back(monomial(4, with({{"b", 1}, {"s", 2}, {"h", 1}}, per_gpu)));
  w.layer_forward_flops = Formula(polynomial(std::move(terms)));
  w.values["F_f"] = w.layer_forward_flops.evaluate(w.values);
  return w;
}

std::string SymbolicTerm::work_text() const {
  auto factor = [](const Formula& f, double number) {
    return f.empty() ? number_text(number) : (f.text().find(' ') == std::string::npos ? f.text() : "(" + f.text() + ")");
  };
  std::string text;
  bool same_passes = !layers.empty();
  for (const LayerPasses& lp : layers)
    same_passes = same_passes && !lp.passes_formula.empty() && lp.passes_formula.text() == layers.front().passes_formula.text();
  if (same_passes) {
    text = layers.front().passes_formula.text() + (layers.size() > 1 ? " (" : " ");
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string u = layers[i].unit_formula.empty() ? number_text(layers[i].unit) : layers[i].unit_formula.text();
      text += (i ? " + " : "") + u;
    }
    if (layers.size() > 1) text += ")";
  } else {
    for (const LayerPasses& lp : layers)
      text += (text.empty() ? "" : " + ") + factor(lp.passes_formula, lp.passes) + (lp.passes_formula.empty() ? " x " : " ") +
              factor(lp.unit_formula, lp.unit);
  }
  if (other_work > 0 || text.empty()) text += (text.empty() ? "" : " + ") + number_text(other_work);
  return text;
}

double SymbolicTerm::work_value(const SymbolValues& values) const {
  double w = other_work;
  for (const LayerPasses& lp : layers)
    w += (lp.passes_formula.empty() ? lp.passes : lp.passes_formula.evaluate(values)) *
         (lp.unit_formula.empty() ? lp.unit : lp.unit_formula.evaluate(values));
  return w;
}

double SymbolicTerm::efficiency() const {
  return parameter_value > 0 && seconds > 0 ? work / (parameter_value * seconds) : 0;
}

double SymbolicTerm::value() const {
  const double eta = efficiency();
  return eta > 0 ? work / (eta * parameter_value) : seconds;
}

double SymbolicTerm::value(const SymbolValues& values) const {
  const double eta = efficiency();
  return eta > 0 ? work_value(values) / (eta * parameter_value) : seconds;
}

SymbolicForm symbolic_form(const AnalyticResult& result, const workloads::Job& job,
                           const platforms::PlatformConfig& platform, const WorkloadSymbols& symbols) {
  const Rates rates{platform, platforms::fabric_facts(platform), std::max(1, platform.node.gpus)};
  LayerOfName layer_of(job);
  SymbolicForm form;
  std::map<TermKey, size_t> index;
  for (const PathSegment& seg : result.critical_path) {
    const double seconds = seg.end_s - seg.start_s;
    if (seconds <= 0) continue;  // ended when the op before it did
    const workloads::Rank& rank = job.ranks[size_t(seg.rank)];
    const workloads::Op& op = rank.program->ops[seg.op];
    SymbolicTerm t = term_of(job, rank, op, rates);
    if (t.work <= 0 || t.parameter_value <= 0) {  // nothing to be bound by: a latency
      t.parameter = "latency";
      t.parameter_value = 0;
      t.work = 0;
    }
    t.seconds = seconds;
    const TermKey key = key_of(t);
    auto [it, inserted] = index.emplace(key, form.terms.size());
    if (inserted) {
      form.terms.push_back(t);
      form.terms.back().work = 0;
      form.terms.back().ops = 0;
      form.terms.back().seconds = 0;
    }
    SymbolicTerm& sum = form.terms[it->second];
    sum.work += t.work;
    sum.seconds += t.seconds;
    sum.ops += 1;
    // The work in layer passes, by phase; the passes counted in units of the first one seen.
    const char group = phase_group(op.phase);
    if (t.work <= 0 || !group || layer_of(op.name) < 0) {
      sum.other_work += t.work;
      continue;
    }
    auto lp = std::find_if(sum.layers.begin(), sum.layers.end(), [&](const LayerPasses& l) { return l.phase == group; });
    if (lp == sum.layers.end()) {
      sum.layers.push_back(LayerPasses{group, pass_unit(job, rank, op, key, rates, layer_of), 0, {}, {}});
      lp = sum.layers.end() - 1;
    }
    lp->passes += t.work / lp->unit;
  }
  for (SymbolicTerm& t : form.terms) {
    std::sort(t.layers.begin(), t.layers.end(), [](const LayerPasses& a, const LayerPasses& b) {
      return std::string("fbr").find(a.phase) < std::string("fbr").find(b.phase);
    });
    if (!symbols.values.empty()) name_passes(t, symbols);
    form.value_s += t.value();
  }
  return form;
}

}  // namespace tessera::analytic
