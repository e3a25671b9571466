// Analytic fidelity in closed form: pipeline bubbles, a gradient all-reduce hidden under the
// backward, rank symmetry, a program that cannot finish.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

#include "analytic/iteration.h"
#include "analytic/rank_classes.h"
#include "analytic/symbolic.h"
#include "platforms/platform_file.h"
#include "sc_main/sensitivity.h"
#include "tests/support/jobs.h"
#include "test_helpers.h"
#include "workloads/workload.h"

namespace {

using namespace tessera;
namespace wt = tessera::workloads::testing;

// An ideal node: no latency anywhere, links so fast that transfers are free, no kernel overhead:
// the roofline times a kernel by its FLOPs alone.
platforms::PlatformConfig free_fabric(int gpus) {
  platforms::PlatformConfig p = tessera::testing::ideal_node(gpus, 1e6);
  p.node.nvlink.link.latency_ns = 0;
  p.node.nvlink.switch_latency_ns = 0;
  p.gpu.kernel_overhead_us = 0;
  p.validate();
  return p;
}

analytic::AnalyticResult cost(const platforms::PlatformConfig& p, const workloads::Job& job) {
  const platforms::RoutedTopology topology(p);
  return analytic::cost_iteration(p, topology, job, analytic::AnalyticOptions{});
}

// 24 uniform layers of F FLOPs per sample over p stages of v chunks, m micro-batches.
workloads::CompiledJob uniform_pipeline(workloads::Schedule schedule, int p, int v, int64_t m, double F) {
  workloads::Strategy s;
  s.pp = p;
  s.vpp = v;
  s.schedule = schedule;
  s.global_batch = m;
  return workloads::compile(wt::uniform_layers(24, F), s);
}

// GPT-3 1.3B cut to `layers` layers.
workloads::ModelSpec gpt_layers(const std::string& layers) {
  workloads::ModelSpec model = workloads::load_model("gpt3-1.3b");
  workloads::ModelOverrides o;
  workloads::set_model_override(o, "layers", layers);
  workloads::apply_overrides(model, o);
  return model;
}

// The iteration against m (t_f + t_b): the bubble fraction.
double bubble(workloads::Schedule schedule, int p, int v, int64_t m) {
  const double F = 1e12;
  const workloads::CompiledJob c = uniform_pipeline(schedule, p, v, m, F);
  const platforms::PlatformConfig platform = free_fabric(p);
  const analytic::AnalyticResult r = cost(platform, c.job);
  EXPECT_FALSE(r.deadlocked) << r.deadlock;
  const double rate = platform.gpu.peak_tflops[size_t(workloads::DType::BF16)] * 1e12 * platform.gpu.compute_efficiency;
  const double tf = 24.0 / p * F / rate, tb = 2 * tf;
  return r.iteration_time_s / (double(m) * (tf + tb)) - 1;
}

TEST(AnalyticClosedForm, OneFOneBAndGPipeBubble) {
  for (auto schedule : {workloads::Schedule::GPipe, workloads::Schedule::OneFOneB})
    for (int p : {2, 4, 8})
      for (int64_t m : {1, 4, 16})
        EXPECT_NEAR(bubble(schedule, p, 1, m), double(p - 1) / double(m), 1e-6) << "p " << p << " m " << m;
}

TEST(AnalyticClosedForm, InterleavedBubble) {
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int64_t m : {int64_t(p), 4 * int64_t(p)})
        EXPECT_NEAR(bubble(workloads::Schedule::Interleaved, p, v, m), double(p - 1) / double(v * m), 1e-6)
            << "p " << p << " v " << v << " m " << m;
}

// A gradient all-reduce issued during the backward on its own stream, which the optimizer waits
// for: hidden when the rest of the backward is longer (no exposed communication, the iteration
// is compute alone), exposed when it is not.
workloads::Job backward_with_allreduce(double rest_flops) {
  workloads::Job job;
  job.communicators.push_back({"dp", {0, 1}});
  for (int r = 0; r < 2; ++r) {
    tessera::testing::ProgramBuilder b(job, r);
    const auto first = b.compute("backward.first", "compute", 1e12, 0);
    const auto reduce = b.collective("grads.allreduce", "dp_comm", workloads::CollectiveKind::AllReduce, 0, 64 << 20, {first});
    b.compute("backward.rest", "compute", rest_flops, 0);
    b.compute("optimizer", "compute", 1e9, 0, {reduce});
    b.finish();
  }
  return job;
}

TEST(AnalyticClosedForm, AllReduceHiddenUnderBackward) {
  const platforms::PlatformConfig p = tessera::testing::ideal_node(2);
  const analytic::AnalyticResult hidden = cost(p, backward_with_allreduce(1e14));
  ASSERT_FALSE(hidden.deadlocked);
  for (const analytic::RankCost& r : hidden.ranks) {
    EXPECT_EQ(r.exposed_communication_s, 0.0);
    EXPECT_GT(r.overlapped_communication_s, 0.0);
    EXPECT_DOUBLE_EQ(r.compute_s, hidden.iteration_time_s);
    // By cause: compute alone, no data-parallel time.
    const auto& c = r.time_by_cause;
    EXPECT_EQ(c[size_t(models::TimeCause::DataParallel)], 0.0);
    EXPECT_DOUBLE_EQ(c[size_t(models::TimeCause::Compute)], hidden.iteration_time_s);
  }
  const analytic::AnalyticResult exposed = cost(p, backward_with_allreduce(1e9));
  for (const analytic::RankCost& r : exposed.ranks) {
    EXPECT_GT(r.exposed_communication_s, 0.0);
    EXPECT_DOUBLE_EQ(r.time_by_cause[size_t(models::TimeCause::DataParallel)], r.exposed_communication_s);
  }
}

TEST(AnalyticSymmetry, EquivalentRanksAreCostedOnce) {
  const platforms::PlatformConfig p = tessera::testing::ideal_node(8);
  EXPECT_EQ(cost(p, tessera::testing::one_collective(8, workloads::CollectiveKind::AllReduce, 1 << 20)).classes, 1);
  // A sender, a receiver and six idle ranks.
  EXPECT_EQ(cost(p, tessera::testing::transfers(8, {{0, 1}}, 1 << 20)).classes, 3);
  // Data parallel over 4, two pipeline stages: one class per stage.
  workloads::Strategy s;
  s.pp = 2;
  s.dp = 4;
  s.global_batch = 8;
  const workloads::CompiledJob c = workloads::compile(wt::uniform_layers(8, 1e9), s);
  const analytic::AnalyticResult r = cost(p, c.job);
  EXPECT_EQ(r.classes, 2);
  for (size_t k = 0; k < r.ranks.size(); ++k)
    EXPECT_EQ(r.ranks[k].finish_s, r.ranks[c.stage_of_rank[k] == 0 ? 0 : 4].finish_s) << k;
}

TEST(AnalyticSymmetry, RanksOnAnotherNodeDiffer) {
  // Members 0-3 of a communicator on one node, 4 on the next: shapes differ from a one-node
  // communicator, so the classes are refined by node placement.
  platforms::PlatformConfig p = platforms::load_platform("dgx-a100");
  p.nodes = 2;
  workloads::Job job;
  job.communicators.push_back({"a", {0, 1, 2, 3}});
  job.communicators.push_back({"b", {4, 8, 12, 15}});
  for (int r = 0; r < 16; ++r) {
    tessera::testing::ProgramBuilder b(job, r);
    if (r < 4) b.collective("x", "comm", workloads::CollectiveKind::AllReduce, 0, 1 << 20);
    else if (r == 4 || r == 8 || r == 12 || r == 15) b.collective("x", "comm", workloads::CollectiveKind::AllReduce, 1, 1 << 20);
    else b.compute("idle", "compute", 0, 1);
    b.finish();
  }
  const analytic::AnalyticResult r = cost(p, job);
  EXPECT_EQ(r.classes, 3);
  EXPECT_LT(r.ranks[0].finish_s, r.ranks[4].finish_s);  // the second crosses the network
}

TEST(AnalyticRun, NamesAProgramThatCannotFinish) {
  workloads::Job job;
  for (int r = 0; r < 2; ++r) {
    tessera::testing::ProgramBuilder b(job, r);
    if (r == 1) b.p2p(false, "recv_never_sent", "pp_recv", 0, 1024, 7);
    else b.compute("alone", "compute", 1e9, 0);
    b.finish();
  }
  const analytic::AnalyticResult r = cost(tessera::testing::ideal_node(2), job);
  EXPECT_TRUE(r.deadlocked);
  EXPECT_NE(r.deadlock.find("rank 1: [pp_recv] op 0 recv recv_never_sent"), std::string::npos) << r.deadlock;
}

// An op naming a collective algorithm that does not exist is an error naming the op and the
// name, as in the event-driven fidelities, never a run with the tuner's choice.
TEST(AnalyticRun, RefusesAnUnknownCollectiveAlgorithm) {
  workloads::Job job = tessera::testing::one_collective(2, workloads::CollectiveKind::AllReduce, 1 << 20);
  const uint32_t warp = job.intern("warp-drive");
  for (workloads::Rank& r : job.ranks) {
    auto program = std::make_shared<workloads::Program>(*r.program);
    program->ops[0].algorithm = warp;
    r.program = program;
  }
  try {
    cost(tessera::testing::ideal_node(2), job);
    FAIL() << "costed a collective of an unknown algorithm";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "op 'collective' names an unknown collective algorithm 'warp-drive'");
  }
  job.names[warp] = "ring/ll128";  // a known one is costed
  EXPECT_FALSE(cost(tessera::testing::ideal_node(2), job).deadlocked);
}

// Sensitivities of two layers of GPT-3 1.3B, data parallel over `gpus` DGX A100 GPUs (roofline
// compute): the NICs carry nothing on one node, so their bandwidth's elasticity is exactly zero
// and doubling it buys nothing; across two nodes the all-reduces cross them.
std::vector<app::Sensitivity> gpt_sensitivities(int nodes) {
  platforms::PlatformConfig p = platforms::load_platform("dgx-a100");
  p.nodes = nodes;
  p.validate();
  const workloads::ModelSpec model = gpt_layers("2");
  workloads::Strategy s;
  s.dp = 8 * nodes;
  s.global_batch = 8 * nodes;
  const workloads::CompiledJob c = workloads::compile(model, s, p.gpu_count());
  const auto time = [&](const std::vector<std::string>& settings) {
    platforms::PlatformConfig changed = p;
    for (const std::string& setting : settings) platforms::apply_setting(changed, setting);
    changed.validate();
    return cost(changed, c.job).iteration_time_s;
  };
  return app::sensitivities(p, time, time({}), 0.01);
}

const app::Sensitivity& find(const std::vector<app::Sensitivity>& s, const std::string& name) {
  for (const app::Sensitivity& x : s)
    if (x.parameter->name == name) return x;
  throw std::runtime_error("no parameter " + name);
}

TEST(AnalyticSensitivity, UnusedBandwidthHasNone) {
  const auto one = gpt_sensitivities(1);
  const double base = find(one, "peak FLOP/s fp32").time_at_double_s;  // bf16 work: fp32 unused
  EXPECT_EQ(find(one, "NIC bandwidth").elasticity, 0.0);
  EXPECT_EQ(find(one, "NIC bandwidth").time_at_double_s, base);
  EXPECT_EQ(find(one, "peak FLOP/s fp32").elasticity, 0.0);
  EXPECT_LT(find(one, "peak FLOP/s bf16").elasticity, -0.3);
  EXPECT_LT(find(one, "NVLink bandwidth").elasticity, 0.0);
  EXPECT_LT(find(one, "HBM bandwidth").elasticity, 0.0);
  // Sorted by magnitude.
  for (size_t k = 1; k < one.size(); ++k) EXPECT_GE(std::fabs(one[k - 1].elasticity), std::fabs(one[k].elasticity));
  const auto two = gpt_sensitivities(2);
  EXPECT_LT(find(two, "NIC bandwidth").elasticity, 0.0);
  EXPECT_LT(find(two, "NIC bandwidth").time_at_double_s, find(two, "peak FLOP/s fp32").time_at_double_s);
}

TEST(AnalyticSensitivity, ElasticityOfAPowerLaw) {
  // T = c p^-0.5: the central difference of the logarithms gives -0.5.
  EXPECT_NEAR(app::elasticity(std::pow(0.99, -0.5), std::pow(1.01, -0.5), 0.01), -0.5, 1e-12);
}

// The symbolic form on a free fabric: the critical path of a pipeline of uniform stages crosses
// (m v + p - 1) chunk passes of a stage, forward and backward, so its matmul work is
// W = (m v + p - 1) (F_f + F_b) / (p v) and T = W / (eta peak) with eta the roofline's
// efficiency; evaluated, the terms give the analytic time.
TEST(AnalyticSymbolic, PipelinePathAndValue) {
  const double F = 1e12;
  for (auto [schedule, p, v, m] : {std::tuple{workloads::Schedule::GPipe, 4, 1, int64_t(8)},
                                   std::tuple{workloads::Schedule::OneFOneB, 8, 1, int64_t(16)},
                                   std::tuple{workloads::Schedule::Interleaved, 4, 2, int64_t(8)}}) {
    const workloads::CompiledJob c = uniform_pipeline(schedule, p, v, m, F);
    const platforms::PlatformConfig platform = free_fabric(p);
    const platforms::RoutedTopology topology(platform);
    analytic::AnalyticOptions o;
    o.critical_path = true;
    const analytic::AnalyticResult r = analytic::cost_iteration(platform, topology, c.job, o);
    const analytic::SymbolicForm form = analytic::symbolic_form(r, c.job, platform);
    EXPECT_NEAR(form.value_s, r.iteration_time_s, 1e-12 * r.iteration_time_s);
    ASSERT_FALSE(form.terms.empty());
    const analytic::SymbolicTerm& matmul = form.terms.front();
    EXPECT_EQ(matmul.parameter, "peak_bf16");
    EXPECT_EQ(matmul.cause, models::TimeCause::Compute);
    EXPECT_NEAR(matmul.work, double(m * v + p - 1) * 3 * 24 * F / (p * v), 1e-9 * matmul.work) << p << " " << v << " " << m;
    EXPECT_NEAR(matmul.efficiency(), platform.gpu.compute_efficiency, 1e-9);
  }
}

TEST(AnalyticSymbolic, TermsOfAParallelRunAddUpToItsTime) {
  platforms::PlatformConfig p = platforms::load_platform("dgx-a100");
  p.nodes = 2;
  p.validate();
  const workloads::ModelSpec model = gpt_layers("4");
  workloads::Strategy s;
  s.tp = 2;
  s.pp = 2;
  s.dp = 4;
  s.global_batch = 16;
  const workloads::CompiledJob c = workloads::compile(model, s, p.gpu_count());
  const platforms::RoutedTopology topology(p);
  analytic::AnalyticOptions o;
  o.critical_path = true;
  const analytic::AnalyticResult r = analytic::cost_iteration(p, topology, c.job, o);
  const analytic::SymbolicForm form = analytic::symbolic_form(r, c.job, p);
  EXPECT_NEAR(form.value_s, r.iteration_time_s, 1e-12 * r.iteration_time_s);
  std::set<models::TimeCause> causes;
  for (const analytic::SymbolicTerm& t : form.terms) causes.insert(t.cause);
  EXPECT_TRUE(causes.count(models::TimeCause::Compute));
  EXPECT_TRUE(causes.count(models::TimeCause::TensorParallel));
  // The path is contiguous: each op starts where the one before it ended.
  for (size_t k = 1; k < r.critical_path.size(); ++k)
    EXPECT_EQ(r.critical_path[k].start_s, r.critical_path[k - 1].end_s) << k;
  EXPECT_EQ(r.critical_path.back().end_s, r.iteration_time_s);
}

// Kernels that run back to back are walked as one run, their time split among them by their
// work: the same costs as kernel by kernel, where collectives take SMs in the middle of runs
// (tensor-parallel all-reduces beside the data-parallel reduce-scatters of ZeRO).
TEST(AnalyticSpeed, KernelRunsCostWhatKernelsOneByOneCost) {
  platforms::PlatformConfig p = platforms::load_platform("dgx-a100");
  p.validate();
  workloads::Strategy s;
  s.tp = 2;
  s.pp = 2;
  s.dp = 2;
  s.zero = 1;
  s.global_batch = 8;
  const workloads::CompiledJob c = workloads::compile(gpt_layers("4"), s, p.gpu_count());
  const platforms::RoutedTopology topology(p);
  analytic::AnalyticOptions o;
  o.critical_path = o.trace = true;
  const analytic::AnalyticResult runs = analytic::cost_iteration(p, topology, c.job, o);
  o.kernel_runs = false;
  const analytic::AnalyticResult kernels = analytic::cost_iteration(p, topology, c.job, o);
  ASSERT_FALSE(runs.deadlocked) << runs.deadlock;
  EXPECT_LT(double(runs.steps), 0.7 * double(kernels.steps));
  const double T = kernels.iteration_time_s, eps = 1e-12 * T;
  EXPECT_NEAR(runs.iteration_time_s, T, eps);
  ASSERT_EQ(runs.ranks.size(), kernels.ranks.size());
  for (size_t k = 0; k < runs.ranks.size(); ++k) {
    const analytic::RankCost &a = runs.ranks[k], &b = kernels.ranks[k];
    EXPECT_EQ(a.ops, b.ops);
    for (size_t i = 0; i < a.compute_by_cause.size(); ++i) EXPECT_NEAR(a.compute_by_cause[i], b.compute_by_cause[i], eps) << k << " " << i;
    for (size_t i = 0; i < a.time_by_cause.size(); ++i) EXPECT_NEAR(a.time_by_cause[i], b.time_by_cause[i], eps) << k << " " << i;
    // (a run's members' spans are kept when the run ends: in another order among the copies')
    std::vector<models::OpSpan> sa = a.spans, sb = b.spans;
    for (auto* v : {&sa, &sb})
      std::sort(v->begin(), v->end(), [](const models::OpSpan& x, const models::OpSpan& y) { return x.op < y.op; });
    ASSERT_EQ(sa.size(), sb.size()) << k;
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].op, sb[i].op) << k << " " << i;
      EXPECT_NEAR(sa[i].start.to_seconds(), sb[i].start.to_seconds(), 2e-12) << k << " " << i;
      EXPECT_NEAR(sa[i].end.to_seconds(), sb[i].end.to_seconds(), 2e-12) << k << " " << i;
    }
  }
  ASSERT_EQ(runs.critical_path.size(), kernels.critical_path.size());
  for (size_t i = 0; i < runs.critical_path.size(); ++i) {
    EXPECT_EQ(runs.critical_path[i].op, kernels.critical_path[i].op) << i;
    EXPECT_NEAR(runs.critical_path[i].end_s, kernels.critical_path[i].end_s, eps) << i;
  }
}

// Where a program's kernels are on two streams, another stream's kernel may queue between two
// of one stream: no runs there (the kernel of stream b, ready first, runs between a1 and a2).
TEST(AnalyticSpeed, KernelsOfTwoStreamsRunInArrivalOrder) {
  workloads::Job job;
  tessera::testing::ProgramBuilder b(job, 0);
  b.compute("a1", "a", 1e12, 0);
  b.compute("a2", "a", 1e12, 0);
  b.compute("b1", "b", 2e12, 0);
  b.finish();
  const platforms::PlatformConfig p = free_fabric(1);
  const platforms::RoutedTopology topology(p);
  analytic::AnalyticOptions o;
  o.trace = true;
  const analytic::AnalyticResult r = analytic::cost_iteration(p, topology, job, o);
  ASSERT_EQ(r.ranks[0].spans.size(), 3u);
  std::map<uint32_t, models::OpSpan> span;
  for (const models::OpSpan& s : r.ranks[0].spans) span[s.op] = s;
  EXPECT_EQ(span[2].start, span[0].end);  // b1 after a1
  EXPECT_EQ(span[1].start, span[2].end);  // a2 after b1
}

TEST(AnalyticFormula, PrintsAsWrittenAndEvaluates) {
  using analytic::monomial;
  const analytic::Formula L =
      analytic::Formula(analytic::polynomial({monomial(1, {{"m", 1}, {"v", 1}}), monomial(1, {{"p", 1}}), monomial(-1)}))
          .times(analytic::Formula(monomial(1, {{"layers", 1}, {"p", -1}, {"v", -1}})));
  EXPECT_EQ(L.text(), "(m v + p - 1) (layers / (p v))");
  EXPECT_DOUBLE_EQ(L.evaluate({{"m", 8}, {"v", 2}, {"p", 4}, {"layers", 24}}), (8.0 * 2 + 4 - 1) * 24 / 8);
  const analytic::Formula F(analytic::polynomial({monomial(24, {{"b", 1}, {"s", 1}, {"h", 2}, {"t", -1}}),
                                                  monomial(4, {{"b", 1}, {"s", 2}, {"h", 1}, {"t", -1}})}));
  EXPECT_EQ(F.text(), "24 b s h^2 / t + 4 b s^2 h / t");
  EXPECT_TRUE(std::isnan(F.evaluate({{"b", 1}})));  // a symbol without a value
  EXPECT_EQ(analytic::Formula().text(), "");
  EXPECT_EQ(analytic::number_text(0.5), "0.5");
}

analytic::SymbolicForm symbolic_of(const workloads::ModelSpec& model, const workloads::Strategy& s,
                                   const platforms::PlatformConfig& p, analytic::WorkloadSymbols& symbols,
                                   double& iteration_s) {
  const workloads::CompiledJob c = workloads::compile(model, s, p.gpu_count());
  symbols = analytic::workload_symbols(model, c.strategy);
  const platforms::RoutedTopology topology(p);
  analytic::AnalyticOptions o;
  o.critical_path = true;
  const analytic::AnalyticResult r = analytic::cost_iteration(p, topology, c.job, o);
  iteration_s = r.iteration_time_s;
  return analytic::symbolic_form(r, c.job, p, symbols);
}

// W in the named parameters: a GPT pipeline's matmul work on the path is L (F_f + 2 F_f) plus
// the logits and embedding, L = (m v + p - 1) layers / (p v); the formulas evaluated give the
// work and, over eta X, the iteration time.
TEST(AnalyticSymbolic, WorkIsAFormulaOfTheWorkloadParameters) {
  platforms::PlatformConfig p = platforms::load_platform("dgx-a100");
  p.validate();
  for (auto [pp, vpp, schedule] : {std::tuple{4, 1, workloads::Schedule::OneFOneB},
                                   std::tuple{2, 2, workloads::Schedule::Interleaved}}) {
    workloads::Strategy s;
    s.tp = 2;
    s.pp = pp;
    s.vpp = vpp;
    s.schedule = schedule;
    s.dp = 8 / (2 * pp);
    s.global_batch = 8 * s.dp;
    analytic::WorkloadSymbols symbols;
    double T = 0;
    const analytic::SymbolicForm form = symbolic_of(gpt_layers("8"), s, p, symbols, T);
    const analytic::SymbolValues& v = symbols.values;
    const double b = v.at("b"), sq = v.at("s"), h = v.at("h"), t = v.at("t");
    EXPECT_DOUBLE_EQ(v.at("F_f"), (24 * b * sq * h * h + 4 * b * sq * sq * h) / t);
    EXPECT_DOUBLE_EQ(v.at("L"), (v.at("m") * vpp + pp - 1) * 8 / (pp * vpp));
    EXPECT_EQ(symbols.layer_forward_flops.text(), "24 b s h^2 / t + 4 b s^2 h / t");
    double from_formulas = 0;
    bool matmul_seen = false;
    for (const analytic::SymbolicTerm& term : form.terms) {
      EXPECT_NEAR(term.work_value(v), term.work, 1e-9 * term.work) << term.what;
      from_formulas += term.value(v);
      if (term.work_unit != "FLOP") continue;
      matmul_seen = true;
      EXPECT_EQ(term.work_text().rfind("L (F_f + 2 F_f) + ", 0), 0u) << term.work_text();
    }
    EXPECT_TRUE(matmul_seen);
    EXPECT_NEAR(from_formulas, T, 1e-9 * T);
  }
}

// Grouped-query attention and SwiGLU: F_f names h_kv and f.
TEST(AnalyticSymbolic, LayerFlopsOfALlama) {
  const workloads::ModelSpec model = workloads::load_model("llama3-8b");
  workloads::Strategy s;
  s.tp = 4;
  s.dp = 2;
  s.global_batch = 2;
  const workloads::ResolvedStrategy r = workloads::resolve(model, s, 8);
  const analytic::WorkloadSymbols symbols = analytic::workload_symbols(model, r);
  const double b = 1, sq = double(model.seq_length), h = double(model.hidden), t = 4;
  const double h_kv = h * double(model.kv_heads) / double(model.heads), f = double(model.ffn_hidden);
  EXPECT_DOUBLE_EQ(symbols.values.at("F_f"), (2 * b * sq * h * (2 * h + 2 * h_kv + 3 * f) + 4 * b * sq * sq * h) / t);
  EXPECT_NE(symbols.layer_forward_flops.text().find("h_kv"), std::string::npos);
  EXPECT_NE(symbols.layer_forward_flops.text().find(" f "), std::string::npos);
  EXPECT_EQ(symbols.layer_passes.text(), "m layers");
}

}  // namespace
