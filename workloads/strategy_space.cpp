#include "workloads/strategy_space.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "workloads/compiler.h"
#include "workloads/errors.h"

namespace tessera::workloads {
namespace {

std::vector<int> powers_of_two_up_to(int limit, int64_t dividing) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2)
    if (dividing % v == 0) out.push_back(v);
  return out;
}

template <typename T>
void fill(std::vector<T>& target, const std::vector<T>& given, std::vector<T> fallback) {
  target = given.empty() ? std::move(fallback) : given;
}

}  // namespace

SpaceDimensions complete_dimensions(const SpaceDimensions& g, const ModelSpec& m, int gpus, int gpus_per_node) {
  SpaceDimensions d;
  const bool generic = m.is_generic();
  d.dp = g.dp;  // empty: any
  fill(d.tp, g.tp, generic ? std::vector<int>{1} : powers_of_two_up_to(std::min(gpus, gpus_per_node), m.heads));
  fill(d.pp, g.pp, powers_of_two_up_to(std::min(gpus, 32), m.layers));
  fill(d.cp, g.cp, generic ? std::vector<int>{1} : std::vector<int>{1, 2});
  fill(d.ep, g.ep, m.is_moe() ? powers_of_two_up_to(gpus, m.experts) : std::vector<int>{1});
  fill(d.zero, g.zero, {0, 1, 2, 3});
  fill(d.micro_batch, g.micro_batch, {1, 2, 4, 8});
  fill(d.schedule, g.schedule, {Schedule::OneFOneB, Schedule::Interleaved});
  fill(d.vpp, g.vpp, {2, 4});
  fill(d.recompute, g.recompute, {Recompute::None, Recompute::Selective, Recompute::Full});
  fill(d.sequence_parallel, g.sequence_parallel, generic ? std::vector<bool>{false} : std::vector<bool>{false, true});
  d.keep_dominated = g.keep_dominated;
  return d;
}

size_t SpaceWalk::invalid_total() const {
  size_t n = 0;
  for (const auto& [reason, count] : invalid) n += count;
  return n;
}

std::string reason_class(const std::string& message) {
  std::string text = message;
  const std::string prefix = "invalid strategy: ";
  if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
      out += 'N';
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace {

// The (schedule, vpp) pairs: vpp only with the interleaved schedule.
std::vector<std::pair<Schedule, int>> schedules(const SpaceDimensions& d) {
  std::vector<std::pair<Schedule, int>> out;
  for (Schedule s : d.schedule) {
    if (s != Schedule::Interleaved) out.emplace_back(s, 1);
    else for (int v : d.vpp) out.emplace_back(s, v);
  }
  return out;
}

// Sorts one candidate into the walk.
void classify(const ModelSpec& m, const Strategy& s, int gpus, double hbm, SpaceWalk& walk) {
  try {
    const std::vector<MemoryBreakdown> memory = estimate_stage_memory(m, s, gpus);
    Candidate c{s, 0};
    for (const MemoryBreakdown& b : memory) c.peak_memory_bytes = std::max(c.peak_memory_bytes, b.peak);
    (c.peak_memory_bytes > hbm ? walk.out_of_memory : walk.kept).push_back(std::move(c));
  } catch (const InputError& e) {
    ++walk.invalid[reason_class(e.what())];
  }
}

template <typename T>
bool has(const std::vector<T>& list, T value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The same run as another candidate of the space: sequence parallelism without TP, ZeRO with
// nothing to shard over, selective recompute of the attention core that flash attention never
// saves (each only when the space holds the equivalent).
bool redundant(const SpaceDimensions& d, const Strategy& base, int tp, int64_t replicas, Recompute rc, int zero,
               bool sp) {
  return (sp && tp == 1 && has(d.sequence_parallel, false)) || (zero > 0 && replicas == 1 && has(d.zero, 0)) ||
         (rc == Recompute::Selective && base.flash_attention && has(d.recompute, Recompute::None));
}

// Candidates that differ in one dimension only share a twin key: the searched dimensions, with
// recompute and the ZeRO stage given by the caller.
using TwinKey = std::tuple<int, int, int, int, int64_t, Schedule, int, bool, int, Recompute>;
TwinKey twin_key(const Strategy& s, int zero, Recompute recompute) {
  return {s.tp, s.pp, s.cp, s.ep, s.micro_batch, s.schedule, s.vpp, s.sequence_parallel, zero, recompute};
}

// Of each group of kept candidates with the same key, keeps the first of the least `order` and
// returns the others (in the order they were kept).
template <typename Key, typename Order>
std::vector<Candidate> set_aside_twins(std::vector<Candidate>& kept, Key key, Order order) {
  std::map<TwinKey, size_t> first;  // key -> the index of the group's first least candidate
  for (size_t i = 0; i < kept.size(); ++i) {
    auto [it, fresh] = first.emplace(key(kept[i]), i);
    if (!fresh && order(kept[i]) < order(kept[it->second])) it->second = i;
  }
  std::vector<Candidate> stay, aside;
  for (size_t i = 0; i < kept.size(); ++i) (first.at(key(kept[i])) == i ? stay : aside).push_back(std::move(kept[i]));
  kept = std::move(stay);
  return aside;
}

// A candidate that recomputes more than a kept twin is dominated: recompute adds work (a forward
// pass, or the attention core's, again in the backward) and changes nothing else, so the twin
// that recomputes least is at least as fast and the others need no simulation.
void set_aside_dominated(SpaceWalk& walk) {
  walk.dominated = set_aside_twins(
      walk.kept, [](const Candidate& c) { return twin_key(c.strategy, c.strategy.zero, Recompute::None); },
      [](const Candidate& c) { return c.strategy.recompute; });
}

// ZeRO stages 1 and 2 compile to the same programs (stage 2 also shards the gradients, which
// changes the memory only): where both fit, the one needing more memory is the same run as the
// other, so redundant (a test compares the programs).
void drop_zero_twins(SpaceWalk& walk) {
  const auto aside = set_aside_twins(
      walk.kept,
      [](const Candidate& c) {
        const int zero = c.strategy.zero == 2 ? 1 : c.strategy.zero;
        return twin_key(c.strategy, zero, c.strategy.recompute);
      },
      [](const Candidate& c) { return std::make_pair(c.peak_memory_bytes, c.strategy.zero); });
  walk.redundant += aside.size();
}

}  // namespace

SpaceWalk walk_strategy_space(const ModelSpec& m, const Strategy& base, const SpaceDimensions& d, int gpus,
                              int64_t global_batch, double hbm) {
  SpaceWalk walk;
  const auto sched = schedules(d);
  for (int tp : d.tp) for (int pp : d.pp) for (int cp : d.cp) {
    const int64_t model_parallel = int64_t(tp) * pp * cp;
    const int dp = gpus % model_parallel == 0 ? static_cast<int>(gpus / model_parallel) : 0;
    for (int ep : d.ep) for (int64_t mb : d.micro_batch) for (const auto& [schedule, vpp] : sched)
    for (Recompute rc : d.recompute) for (int zero : d.zero) for (bool sp : d.sequence_parallel) {
      ++walk.enumerated;
      if (!d.dp.empty() && std::find(d.dp.begin(), d.dp.end(), dp) == d.dp.end()) {
        ++walk.excluded;
        continue;
      }
      if (redundant(d, base, tp, int64_t(dp) * cp, rc, zero, sp)) {
        ++walk.redundant;
        continue;
      }
      Strategy s = base;
      s.dp = 0;  // what the GPUs leave, or resolve() names the mismatch
      s.tp = tp, s.pp = pp, s.cp = cp, s.ep = ep, s.micro_batch = mb, s.global_batch = global_batch;
      s.schedule = schedule, s.vpp = vpp, s.recompute = rc, s.zero = zero, s.sequence_parallel = sp;
      classify(m, s, gpus, hbm, walk);
    }
  }
  if (!d.keep_dominated) set_aside_dominated(walk);
  drop_zero_twins(walk);
  return walk;
}

std::vector<std::pair<std::string, std::string>> strategy_settings(const Strategy& s) {
  return {{"tp", std::to_string(s.tp)},
          {"pp", std::to_string(s.pp)},
          {"cp", std::to_string(s.cp)},
          {"ep", std::to_string(s.ep)},
          {"micro-batch", std::to_string(s.micro_batch)},
          {"global-batch", std::to_string(s.global_batch)},
          {"schedule", to_string(s.schedule)},
          {"vpp", std::to_string(s.vpp)},
          {"recompute", to_string(s.recompute)},
          {"zero", std::to_string(s.zero)},
          {"sequence-parallel", s.sequence_parallel ? "true" : "false"}};
}

}  // namespace tessera::workloads
