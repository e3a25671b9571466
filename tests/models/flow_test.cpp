// The flow fidelity mode: the max-min fair allocator against hand-solved allocations and a
// from-scratch solve, and the flow fabric's timing against closed forms (sharing, a flow
// ending, latency once per path, wire overhead), its per-link counters, determinism and scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <new>

#include "models/flow/max_min.h"
#include "tests/support/child_process.h"
#include "tests/support/flow_scenario.h"

// GCC sees malloc/free pair with the replaced operators below and warns of a mismatch: they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Every global allocation of this binary is counted, to show the fabric's steady state makes none.
static uint64_t g_allocations = 0;
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer), so every allocation pairs with the deletes below.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace tessera {
namespace {

using models::MaxMinFairShare;
using testing::FlowScenario;
using testing::TablePaths;
using testing::Transfer;

constexpr double kGBps = 1e9;

// ---------------------------------------------------------------- the allocator, no kernel

TEST(MaxMinFairShare, TwoEqualFlowsOnOneLinkEachGetHalf) {
  MaxMinFairShare share({100 * kGBps});
  const uint32_t link = 0;
  const uint32_t a = share.add(&link, nullptr, 1);
  const uint32_t b = share.add(&link, nullptr, 1);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(a), 50 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(b), 50 * kGBps);
}

// Links 0, 1, 2 of 10, 4 and 3 GB/s; a crosses 0 and 1, b crosses 1, c crosses 0, d crosses 0
// and 2. Link 1 fills first at 2 (a, b); then link 2 at 3 (d); link 0 has 10 - 2 - 3 = 5 for c.
TEST(MaxMinFairShare, ClassicThreeLinkExample) {
  MaxMinFairShare share({10 * kGBps, 4 * kGBps, 3 * kGBps});
  const uint32_t pa[] = {0, 1}, pb[] = {1}, pc[] = {0}, pd[] = {0, 2};
  const uint32_t a = share.add(pa, nullptr, 2), b = share.add(pb, nullptr, 1);
  const uint32_t c = share.add(pc, nullptr, 1), d = share.add(pd, nullptr, 2);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(a), 2 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(b), 2 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(d), 3 * kGBps);
  // b ends: a is held by link 0 now (10 shared by a, c, d with d held at 3 by link 2).
  share.remove(b);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(a), 3.5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 3.5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(d), 3 * kGBps);
}

TEST(MaxMinFairShare, WeightsChargeWireBytesToTheLink) {
  MaxMinFairShare share({9 * kGBps});
  const uint32_t link = 0;
  const double heavy = 2.0;  // a flow whose framing doubles its bytes on the wire
  const uint32_t a = share.add(&link, &heavy, 1);
  const uint32_t b = share.add(&link, nullptr, 1);
  share.recompute();
  // Equal payload rates r with 2r + r = 9.
  EXPECT_DOUBLE_EQ(share.rate(a), 3 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(b), 3 * kGBps);
}

TEST(MaxMinFairShare, ACappedFlowLeavesTheRestToOthers) {
  // 100 GB/s shared by a (capped at 20 GB/s, its channels' rate) and b: b gets the other 80.
  // The cap goes with the flow: reused for another flow without one, the id is uncapped.
  MaxMinFairShare share({100 * kGBps});
  const uint32_t link = 0;
  const uint32_t a = share.add(&link, nullptr, 1, 20 * kGBps);
  const uint32_t b = share.add(&link, nullptr, 1);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(a), 20 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(b), 80 * kGBps);
  share.remove(a);
  const uint32_t c = share.add(&link, nullptr, 1);
  share.recompute();
  EXPECT_EQ(c, a);
  EXPECT_DOUBLE_EQ(share.rate(b), 50 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 50 * kGBps);
  // A cap above the fair share changes nothing; a new cap on the reused id takes effect.
  share.remove(c);
  const uint32_t d = share.add(&link, nullptr, 1, 70 * kGBps);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(d), 50 * kGBps);
  share.remove(b);
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(d), 70 * kGBps);
}

TEST(MaxMinFairShare, AFlowCrossingNoLinkIsUnlimited) {
  MaxMinFairShare share({kGBps});
  const uint32_t a = share.add(nullptr, nullptr, 0);
  EXPECT_TRUE(share.recompute().empty());
  EXPECT_TRUE(std::isinf(share.rate(a)));
}

TEST(MaxMinFairShare, RecomputeVisitsOnlyTheConnectedComponent) {
  MaxMinFairShare share({kGBps, kGBps, kGBps, kGBps});
  const uint32_t p01[] = {0, 1}, p1[] = {1}, p23[] = {2, 3}, p3[] = {3};
  const uint32_t a = share.add(p01, nullptr, 2), b = share.add(p1, nullptr, 1);
  const uint32_t c = share.add(p23, nullptr, 2), d = share.add(p3, nullptr, 1);
  EXPECT_EQ(share.recompute().size(), 4u);
  share.remove(d);
  std::vector<uint32_t> touched = share.recompute();
  EXPECT_EQ(touched, std::vector<uint32_t>{c});
  EXPECT_DOUBLE_EQ(share.rate(c), kGBps);
  EXPECT_DOUBLE_EQ(share.rate(a), 0.5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(b), 0.5 * kGBps);
  EXPECT_TRUE(share.recompute().empty());  // nothing changed
}

TEST(MaxMinFairShare, AChangeSolvesAgainOnlyTheFlowsAtOrAboveItsLevel) {
  // a and b share a 1 GB/s link; b, c and d a 10 GB/s one: one component.
  MaxMinFairShare share({kGBps, 10 * kGBps});
  const uint32_t p0[] = {0}, p01[] = {0, 1}, p1[] = {1};
  const uint32_t a = share.add(p0, nullptr, 1), b = share.add(p01, nullptr, 2);
  const uint32_t c = share.add(p1, nullptr, 1), d = share.add(p1, nullptr, 1);
  EXPECT_EQ(share.recompute().size(), 4u);
  EXPECT_DOUBLE_EQ(share.rate(b), 0.5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(d), 4.75 * kGBps);
  // d ends at 4.75 GB/s: a and b, fixed at 0.5 on the other link, keep their rates.
  share.remove(d);
  EXPECT_EQ(share.recompute(), std::vector<uint32_t>{c});
  EXPECT_DOUBLE_EQ(share.rate(c), 9.5 * kGBps);
  // A flow joining the 10 GB/s link gets at least a third of it: a and b again keep theirs.
  const uint32_t e = share.add(p1, nullptr, 1);
  std::vector<uint32_t> solved = share.recompute();
  std::sort(solved.begin(), solved.end());
  EXPECT_EQ(solved, (std::vector<uint32_t>{c, e}));
  EXPECT_DOUBLE_EQ(share.rate(e), 4.75 * kGBps);
  // b ends at 0.5 GB/s: everything at or above that level is solved again.
  share.remove(b);
  EXPECT_EQ(share.recompute().size(), 3u);
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  EXPECT_DOUBLE_EQ(share.rate(e), 5 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 5 * kGBps);
}

TEST(MaxMinFairShare, AChangeSolvesAgainOnlyTheFlowsItsNeighboursBottleneckMoves) {
  // Three NICs: NIC i carries f_i and g_i; every f also crosses a shared link X (one component,
  // everything at 5 GB/s). g_1 ends: f_1 rises to what its NIC and X leave it. f_2 and f_3 keep
  // their NICs as bottlenecks, so only f_1 is solved again.
  {
    MaxMinFairShare share({10 * kGBps, 10 * kGBps, 10 * kGBps, 25 * kGBps});
    const uint32_t f1p[] = {0, 3}, f2p[] = {1, 3}, f3p[] = {2, 3}, g1p[] = {0}, g2p[] = {1}, g3p[] = {2};
    const uint32_t f1 = share.add(f1p, nullptr, 2), f2 = share.add(f2p, nullptr, 2), f3 = share.add(f3p, nullptr, 2);
    const uint32_t g1 = share.add(g1p, nullptr, 1);
    share.add(g2p, nullptr, 1);
    share.add(g3p, nullptr, 1);
    EXPECT_EQ(share.recompute().size(), 6u);
    EXPECT_DOUBLE_EQ(share.rate(f1), 5 * kGBps);
    share.remove(g1);
    EXPECT_EQ(share.recompute(), std::vector<uint32_t>{f1});
    EXPECT_DOUBLE_EQ(share.rate(f1), 10 * kGBps);
    EXPECT_DOUBLE_EQ(share.rate(f2), 5 * kGBps);
    EXPECT_DOUBLE_EQ(share.rate(f3), 5 * kGBps);
  }
  // The same with X of 18 GB/s and NIC 2 of 20 GB/s carrying f_2 alone: f_2 gets what X leaves
  // (8). Once g_1 ends, f_1 fills X at 5 while f_2 runs at 8 there: f_2 joins the solve, and
  // the two share what f_3 leaves of X (6.5 each); f_3 keeps its NIC.
  {
    MaxMinFairShare share({10 * kGBps, 20 * kGBps, 10 * kGBps, 18 * kGBps});
    const uint32_t f1p[] = {0, 3}, f2p[] = {1, 3}, f3p[] = {2, 3}, g1p[] = {0}, g3p[] = {2};
    const uint32_t f1 = share.add(f1p, nullptr, 2), f2 = share.add(f2p, nullptr, 2), f3 = share.add(f3p, nullptr, 2);
    const uint32_t g1 = share.add(g1p, nullptr, 1);
    share.add(g3p, nullptr, 1);
    share.recompute();
    EXPECT_DOUBLE_EQ(share.rate(f2), 8 * kGBps);
    share.remove(g1);
    std::vector<uint32_t> solved = share.recompute();
    std::sort(solved.begin(), solved.end());
    EXPECT_EQ(solved, (std::vector<uint32_t>{f1, f2}));
    EXPECT_DOUBLE_EQ(share.rate(f1), 6.5 * kGBps);
    EXPECT_DOUBLE_EQ(share.rate(f2), 6.5 * kGBps);
    EXPECT_DOUBLE_EQ(share.rate(f3), 5 * kGBps);
  }
}

// Deterministic pseudo-random numbers (no std::random distribution: those differ by library).
struct Lcg {
  uint64_t x;
  uint32_t next(uint32_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((x >> 33) % n);
  }
};

// Removes one of the active flows (id -> anything), picked by `rng`.
template <typename Active>
void remove_any(MaxMinFairShare& share, Lcg& rng, Active& active) {
  auto it = active.begin();
  std::advance(it, rng.next(static_cast<uint32_t>(active.size())));
  share.remove(it->first);
  active.erase(it);
}

// Max-min fairness holds when every link's load is within its capacity and every flow has a
// bottleneck: a full link on its path where no other flow has a higher rate.
void expect_max_min_fair(const MaxMinFairShare& share, const std::vector<double>& capacity,
                         const std::map<uint32_t, std::vector<uint32_t>>& flows) {
  std::vector<double> load(capacity.size(), 0.0), top(capacity.size(), 0.0);
  for (const auto& [id, path] : flows)
    for (uint32_t l : path) {
      load[l] += share.rate(id);
      top[l] = std::max(top[l], share.rate(id));
    }
  for (size_t l = 0; l < capacity.size(); ++l) EXPECT_LE(load[l], capacity[l] * (1 + 1e-9));
  for (const auto& [id, path] : flows) {
    bool bottleneck = false;
    for (uint32_t l : path)
      bottleneck |= load[l] >= capacity[l] * (1 - 1e-9) && share.rate(id) >= top[l] * (1 - 1e-9);
    EXPECT_TRUE(bottleneck) << "flow " << id << " has no bottleneck link";
  }
}

TEST(MaxMinFairShare, IncrementalUpdatesMatchASolveFromScratch) {
  Lcg rng{42};
  std::vector<double> capacity;
  for (int l = 0; l < 24; ++l) capacity.push_back((1 + rng.next(8)) * 10 * kGBps);
  MaxMinFairShare share(capacity);
  std::map<uint32_t, std::vector<uint32_t>> active;  // id -> path
  for (int op = 0; op < 400; ++op) {
    if (!active.empty() && rng.next(3) == 0) {
      remove_any(share, rng, active);
    } else {
      std::vector<uint32_t> path;
      const uint32_t hops = 1 + rng.next(4);
      while (path.size() < hops) {
        const uint32_t l = rng.next(24);
        if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
      }
      active[share.add(path.data(), nullptr, path.size())] = path;
    }
    if (rng.next(4) != 0) continue;  // several changes per recompute, too
    share.recompute();
    MaxMinFairShare fresh(capacity);
    std::map<uint32_t, uint32_t> fresh_id;
    for (const auto& [id, path] : active) fresh_id[id] = fresh.add(path.data(), nullptr, path.size());
    fresh.recompute();
    for (const auto& [id, path] : active)
      ASSERT_NEAR(share.rate(id), fresh.rate(fresh_id[id]), 1e-9 * share.rate(id)) << "op " << op;
    expect_max_min_fair(share, capacity, active);
  }
  EXPECT_EQ(share.active(), active.size());
  // Regions grew and spread into whole components, too.
  EXPECT_GT(share.regions_grown(), 0u);
  EXPECT_GT(share.components_solved(), 0u);
}

// Progressive filling from scratch over every link, slack or not: the reference.
struct ReferenceFlow {
  std::vector<uint32_t> path;
  std::vector<double> weights;
  double cap = 0.0;  // 0: none
};
std::vector<double> reference_max_min(const std::vector<double>& capacity, const std::vector<ReferenceFlow>& flows) {
  std::vector<double> rate(flows.size(), 0.0), residual = capacity;
  std::vector<bool> fixed(flows.size(), false);
  for (size_t left = flows.size(); left > 0;) {
    double level = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacity.size(); ++l) {
      double w = 0.0;
      for (size_t i = 0; i < flows.size(); ++i)
        for (size_t h = 0; h < flows[i].path.size(); ++h)
          if (!fixed[i] && flows[i].path[h] == l) w += flows[i].weights[h];
      if (w > 0.0) level = std::min(level, residual[l] / w);
    }
    for (size_t i = 0; i < flows.size(); ++i)
      if (!fixed[i] && flows[i].cap > 0.0) level = std::min(level, flows[i].cap);
    // Fix every flow on a link that fills at this level, or at its cap.
    std::vector<bool> full(capacity.size(), false);
    for (size_t l = 0; l < capacity.size(); ++l) {
      double w = 0.0;
      for (size_t i = 0; i < flows.size(); ++i)
        for (size_t h = 0; h < flows[i].path.size(); ++h)
          if (!fixed[i] && flows[i].path[h] == l) w += flows[i].weights[h];
      full[l] = w > 0.0 && residual[l] / w <= level * (1 + 1e-12);
    }
    std::vector<size_t> now;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (fixed[i]) continue;
      bool stop = flows[i].cap > 0.0 && flows[i].cap <= level * (1 + 1e-12);
      for (uint32_t l : flows[i].path) stop |= full[l];
      if (stop) now.push_back(i);
    }
    for (size_t i : now) {
      fixed[i] = true;
      rate[i] = level;
      --left;
      for (size_t h = 0; h < flows[i].path.size(); ++h) residual[flows[i].path[h]] -= flows[i].weights[h] * level;
    }
  }
  return rate;
}

TEST(MaxMinFairShare, ALinkThatCannotFillJoinsNoComponent) {
  // Two NICs of 1 GB/s, both flows spread thinly (a tenth) over a spine link of 10 GB/s.
  MaxMinFairShare share({kGBps, kGBps, 10 * kGBps});
  const uint32_t pa[] = {0, 2}, pb[] = {1, 2}, pc[] = {2};
  const double thin[] = {1.0, 0.1};
  const uint32_t a = share.add(pa, thin, 2), b = share.add(pb, thin, 2);
  EXPECT_EQ(share.recompute().size(), 2u);
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  share.remove(b);  // b's NIC and the spine change, but neither limits a
  EXPECT_TRUE(share.recompute().empty());
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  // A flow that could fill the spine alone makes it tight: a and c meet there. a, at 1 GB/s
  // below the 10 / 1.1 GB/s c gets at least, keeps its rate; c gets what a leaves.
  const uint32_t c = share.add(pc, nullptr, 1);
  EXPECT_EQ(share.recompute(), std::vector<uint32_t>{c});
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 9.9 * kGBps);
  const uint32_t d = share.add(pc, nullptr, 1);  // c and d share what a leaves of the spine
  share.recompute();
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  EXPECT_DOUBLE_EQ(share.rate(c), 4.95 * kGBps);
  EXPECT_DOUBLE_EQ(share.rate(d), 4.95 * kGBps);
  share.remove(c);
  share.remove(d);  // slack again; a, fixed at its NIC's 1 GB/s below their 4.95, keeps it
  EXPECT_TRUE(share.recompute().empty());
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
}

TEST(MaxMinFairShare, ALinkGoneSlackLetsItsFlowsAboveTheChangeGo) {
  // a crosses a 1 GB/s NIC and a tenth of a 10 GB/s spine; g its own 20 GB/s NIC and 0.498 of
  // the spine. Together they can fill the spine (0.1 + 0.498 x 20 > 10): a gets its NIC's 1 GB/s
  // and g what is left of the spine, 9.9 / 0.498. Once a ends the spine cannot fill: g, above
  // a's level, is solved again without it and gets its NIC.
  MaxMinFairShare share({kGBps, 10 * kGBps, 20 * kGBps});
  const uint32_t pa[] = {0, 1}, pg[] = {2, 1};
  const double wa[] = {1.0, 0.1}, wg[] = {1.0, 0.498};
  const uint32_t a = share.add(pa, wa, 2), g = share.add(pg, wg, 2);
  EXPECT_EQ(share.recompute().size(), 2u);
  EXPECT_DOUBLE_EQ(share.rate(a), kGBps);
  EXPECT_DOUBLE_EQ(share.rate(g), 9.9 * kGBps / 0.498);
  share.remove(a);
  EXPECT_EQ(share.recompute(), std::vector<uint32_t>{g});
  EXPECT_DOUBLE_EQ(share.rate(g), 20 * kGBps);
}

TEST(MaxMinFairShare, SpreadFlowsWithCapsMatchProgressiveFillingOverEveryLink) {
  // Eight NICs, a few thin spine links shared by flows spread over them, caps on some flows:
  // links go tight and slack as flows come and go.
  Lcg rng{7};
  std::vector<double> capacity;
  for (int l = 0; l < 8; ++l) capacity.push_back(25 * kGBps);
  for (int l = 0; l < 6; ++l) capacity.push_back((2 + rng.next(8)) * 10 * kGBps);
  MaxMinFairShare share(capacity);
  std::map<uint32_t, ReferenceFlow> active;
  for (int op = 0; op < 600; ++op) {
    if (!active.empty() && rng.next(3) == 0) {
      remove_any(share, rng, active);
    } else {
      ReferenceFlow f;
      f.path = {rng.next(8), 8 + rng.next(8)};
      if (f.path[1] == f.path[0] || f.path[1] >= 8) f.path[1] = 8 + rng.next(6);
      f.weights = {1.0, 0.05 * (1 + rng.next(20))};
      for (uint32_t s = 8; s < 14 && rng.next(3) == 0; ++s)
        if (s != f.path[1]) {
          f.path.push_back(s);
          f.weights.push_back(0.1);
        }
      f.cap = rng.next(4) == 0 ? (1 + rng.next(30)) * kGBps : 0.0;
      active[share.add(f.path.data(), f.weights.data(), f.path.size(), f.cap)] = f;
    }
    if (rng.next(3) != 0) continue;
    share.recompute();
    std::vector<ReferenceFlow> flows;
    for (const auto& [id, f] : active) flows.push_back(f);
    const std::vector<double> expected = reference_max_min(capacity, flows);
    size_t i = 0;
    for (const auto& [id, f] : active) {
      ASSERT_NEAR(share.rate(id), expected[i], 1e-9 * expected[i]) << "op " << op << ", flow " << id;
      ++i;
    }
  }
  EXPECT_GT(share.regions_grown(), 0u);
}

// ---------------------------------------------------------------- the fabric, in a child

class FlowFabricTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { protocol::set_time_resolution(); }
};

sc_core::sc_time ns(double v) { return sc_core::sc_time(v, sc_core::SC_NS); }

// Runs the schedule and reports every transfer's outcome and every link's counters.
nlohmann::json simulate(const TablePaths& paths, const std::vector<Transfer>& schedule,
                        uint32_t ranks) {
  return testing::run_in_child([&] {
    FlowScenario scenario("scenario", paths, schedule, ranks);
    sc_core::sc_start();
    nlohmann::json r;
    for (const testing::Outcome& o : scenario.outcomes()) {
      r["left"].push_back(o.left_ps);
      r["arrived"].push_back(o.arrived_ps);
      r["left_order"].push_back(o.left_order);
      r["arrived_order"].push_back(o.arrived_order);
    }
    const models::FlowFabric& f = scenario.fabric;
    for (uint32_t l = 0; l < f.links(); ++l) {
      r["link_bytes"].push_back(f.bytes_carried(l));
      r["link_chunks"].push_back(f.chunks_carried(l));
      r["link_busy_ps"].push_back(f.busy_time(l).value());
    }
    r["delivered_bytes"] = scenario.bytes_delivered();
    r["started"] = f.flows_started();
    r["finished"] = f.flows_finished();
    r["delivered"] = f.flows_delivered();
    r["active"] = f.active_flows();
    r["in_flight"] = f.in_flight();
    r["payloads_in_use"] = scenario.pool().in_use();
    r["end_ps"] = sc_core::sc_time_stamp().value();
    return r;
  });
}

constexpr double kB = 100 * kGBps;  // 1e11 bytes/s: 1e6 bytes take 10 us
constexpr uint64_t kS = 1000000;
constexpr uint64_t kUs = 1000000;  // ps

TEST_F(FlowFabricTest, TwoEqualFlowsOnOneLinkFinishAtTwiceSOverB) {
  TablePaths paths(3);
  const uint32_t link = paths.add_link(kB, ns(500));
  paths.set_path(0, 2, {link});
  paths.set_path(1, 2, {link});
  const nlohmann::json r = simulate(paths, {{0, 0, 2, kS}, {0, 1, 2, kS}}, 3);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r["left"][i].get<uint64_t>(), 20 * kUs);           // 2S/B
    EXPECT_EQ(r["arrived"][i].get<uint64_t>(), 20 * kUs + 500000);  // + latency
  }
  // Ties go to the earlier injection.
  EXPECT_EQ(r["left_order"][0].get<int>(), 0);
  EXPECT_EQ(r["arrived_order"][1].get<int>(), 1);
  EXPECT_EQ(r["payloads_in_use"].get<int>(), 0);
}

TEST_F(FlowFabricTest, AFlowEndingFreesItsShare) {
  TablePaths paths(2);
  const uint32_t link = paths.add_link(kB);
  paths.set_path(0, 1, {link});
  // S and 2S together: both at B/2 until 2S/B, then the larger alone: S/B more.
  const nlohmann::json r = simulate(paths, {{0, 0, 1, kS}, {0, 0, 1, 2 * kS}}, 2);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["left"][0].get<uint64_t>(), 20 * kUs);
  EXPECT_EQ(r["left"][1].get<uint64_t>(), 30 * kUs);
  // Staggered: A alone for 5 us (half sent), then both at B/2: A's other half takes 10 us,
  // B sends half meanwhile, then the rest alone in 5 us.
  const nlohmann::json s = simulate(paths, {{0, 0, 1, kS}, {5e-6, 0, 1, kS}}, 2);
  ASSERT_FALSE(s.contains("error")) << s.dump();
  EXPECT_EQ(s["left"][0].get<uint64_t>(), 15 * kUs);
  EXPECT_EQ(s["left"][1].get<uint64_t>(), 20 * kUs);
}

// The allocator's classic example through the fabric: with sizes proportional to the max-min
// rates (2, 2, 5, 3 GB/s) every flow ends at the same instant, 1 ms.
TEST_F(FlowFabricTest, FlowsGetMaxMinSharesOfTheirBottlenecks) {
  TablePaths paths(5);
  const uint32_t l0 = paths.add_link(10 * kGBps), l1 = paths.add_link(4 * kGBps);
  const uint32_t l2 = paths.add_link(3 * kGBps);
  paths.set_path(0, 4, {l0, l1});
  paths.set_path(1, 4, {l1});
  paths.set_path(2, 4, {l0});
  paths.set_path(3, 4, {l0, l2});
  const nlohmann::json r = simulate(
      paths, {{0, 0, 4, 2 * kS}, {0, 1, 4, 2 * kS}, {0, 2, 4, 5 * kS}, {0, 3, 4, 3 * kS}}, 5);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r["left"][i].get<uint64_t>(), 1000 * kUs) << i;
}

// A flow spread over equal-cost paths (flow fidelity across a network): an ingress link, two
// parallel links carrying half each, an egress link. Alone, it is limited by its whole links,
// not by half a parallel one; with a second flow on one parallel link, that link holds its
// share to what is left there. Each parallel link counts half its bytes and busy time, and its
// latency is the mean of the two paths'.
TEST_F(FlowFabricTest, AFlowSpreadOverParallelLinksLoadsEachWithItsShare) {
  TablePaths paths(3);
  const uint32_t in = paths.add_link(kB), a = paths.add_link(kB / 2, ns(100)), b = paths.add_link(kB / 2, ns(300));
  const uint32_t out = paths.add_link(kB);
  paths.set_path(0, 1, {in, a, b, out}, {1.0, 0.5, 0.5, 1.0});
  const nlohmann::json r = simulate(paths, {{0, 0, 1, kS}}, 3);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["left"][0].get<uint64_t>(), 10 * kUs);  // S/B: the parallel pair is B
  EXPECT_EQ(r["arrived"][0].get<uint64_t>(), 10 * kUs + 200000);
  EXPECT_EQ(r["link_bytes"][a].get<uint64_t>(), kS / 2);
  EXPECT_EQ(r["link_bytes"][in].get<uint64_t>(), kS);
  EXPECT_EQ(r["link_busy_ps"][b].get<uint64_t>(), r["link_busy_ps"][in].get<uint64_t>());  // half at half the rate
  // A second flow of S/2 on link a alone: fair in payload rate, both run at x where a holds
  // x/2 + x = B/2: x = B/3.
  paths.set_path(2, 1, {a});
  const nlohmann::json s = simulate(paths, {{0, 0, 1, kS}, {0, 2, 1, kS / 2}}, 3);
  ASSERT_FALSE(s.contains("error")) << s.dump();
  EXPECT_EQ(s["left"][1].get<uint64_t>(), 15 * kUs);  // S/2 at B/3
  // The spread flow sent S/2 by then, the rest alone at B: 5 us more.
  EXPECT_EQ(s["left"][0].get<uint64_t>(), 20 * kUs);
}

// Three links of 100 ns and two switches of 50 ns: 400 ns once, after the last byte leaves
// (cut-through; packet mode would also store and forward the chunk at each switch).
// A forbidden link (a quiet node's, in a symmetric run) is reported for each flow that crosses
// it, at the flow's start; others pass.
TEST_F(FlowFabricTest, AFlowCrossingAForbiddenLinkIsReported) {
  TablePaths paths(3);
  const uint32_t open = paths.add_link(kB), closed = paths.add_link(kB);
  paths.set_path(0, 1, {open});
  paths.set_path(0, 2, {open, closed});
  const nlohmann::json r = testing::run_in_child([&] {
    FlowScenario scenario("scenario", paths, {{0, 0, 1, kS}, {1e-6, 0, 2, kS}, {2e-6, 0, 2, kS}}, 3);
    std::vector<std::pair<uint32_t, double>> crossed;
    scenario.fabric.forbid({false, true}, [&](uint32_t link) {
      crossed.emplace_back(link, sc_core::sc_time_stamp().to_seconds());
    });
    sc_core::sc_start();
    nlohmann::json out;
    out["crossed"] = nlohmann::json::array();
    for (const auto& [link, at] : crossed) out["crossed"].push_back({link, at});
    return out;
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(r["crossed"].size(), 2u) << r.dump();
  EXPECT_EQ(r["crossed"][0][0].get<uint32_t>(), closed);
  EXPECT_DOUBLE_EQ(r["crossed"][0][1].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(r["crossed"][1][1].get<double>(), 2e-6);
}

// Rail images (SymmetricRun): GPU 0's transfer to GPU 2 (another node of two GPUs) stands for
// GPU 1's to GPU 3 too: GPU 1's link reports the same bytes and busy time as GPU 0's, and GPUs 1
// and 3 the bytes sent and received. A real flow on a link an image crosses, or an image's path
// that costs otherwise, is reported.
nlohmann::json imaged(const TablePaths& paths, const std::vector<Transfer>& schedule) {
  return testing::run_in_child([&] {
    FlowScenario scenario("scenario", paths, schedule, 4);
    std::vector<std::pair<std::string, uint32_t>> broken;
    scenario.fabric.image({-1, 0, -1, -1}, 2,
                          [&](const std::string& why, uint32_t link) { broken.emplace_back(why, link); });
    sc_core::sc_start();
    nlohmann::json out;
    out["broken"] = nlohmann::json::array();
    for (const auto& [why, link] : broken) out["broken"].push_back({why, link});
    for (uint32_t l = 0; l < scenario.fabric.links(); ++l) {
      out["bytes"].push_back(scenario.fabric.bytes_carried(l));
      out["busy_ps"].push_back(scenario.fabric.busy_time(l).value());
    }
    for (uint32_t r = 0; r < 4; ++r) {
      out["sent"].push_back(scenario.fabric.image_bytes_sent(r));
      out["received"].push_back(scenario.fabric.image_bytes_received(r));
    }
    return out;
  });
}

TEST_F(FlowFabricTest, ARailImageCountsItsBytesOnItsOwnLinks) {
  TablePaths paths(4);
  const uint32_t rail0 = paths.add_link(kB), rail1 = paths.add_link(kB);
  paths.set_path(0, 2, {rail0});
  paths.set_path(1, 3, {rail1});
  const nlohmann::json r = imaged(paths, {{0, 0, 2, kS}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_TRUE(r["broken"].empty()) << r.dump();
  EXPECT_EQ(r["bytes"][rail1].get<uint64_t>(), kS);
  EXPECT_EQ(r["bytes"][rail1], r["bytes"][rail0]);
  EXPECT_EQ(r["busy_ps"][rail1], r["busy_ps"][rail0]);
  EXPECT_EQ(r["sent"], nlohmann::json::array({0, kS, 0, 0}));
  EXPECT_EQ(r["received"], nlohmann::json::array({0, 0, 0, kS}));
}

TEST_F(FlowFabricTest, ARailImageBesideAFlowOrOnASlowerRailIsReported) {
  TablePaths paths(4);
  const uint32_t rail0 = paths.add_link(kB), rail1 = paths.add_link(kB);
  paths.set_path(0, 2, {rail0});
  paths.set_path(1, 3, {rail1});
  paths.set_path(1, 2, {rail1});  // a flow of its own on the image's link
  const nlohmann::json shared = imaged(paths, {{0, 0, 2, kS}, {0, 1, 2, kS}});
  ASSERT_FALSE(shared.contains("error")) << shared.dump();
  ASSERT_FALSE(shared["broken"].empty()) << shared.dump();
  EXPECT_EQ(shared["broken"][0][1].get<uint32_t>(), rail1);

  TablePaths slower(4);
  const uint32_t fast = slower.add_link(kB), slow = slower.add_link(kB / 2);
  slower.set_path(0, 2, {fast});
  slower.set_path(1, 3, {slow});
  const nlohmann::json r = imaged(slower, {{0, 0, 2, kS}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(r["broken"].size(), 1u) << r.dump();
  EXPECT_NE(r["broken"][0][0].get<std::string>().find("does not cost"), std::string::npos) << r.dump();
}

TEST_F(FlowFabricTest, LatencyIsAddedOncePerPath) {
  TablePaths paths(2);
  const uint32_t up = paths.add_link(kB, ns(100));
  const uint32_t across = paths.add_link(kB, ns(100), ns(50));
  const uint32_t down = paths.add_link(kB, ns(100), ns(50));
  paths.set_path(0, 1, {up, across, down});
  paths.set_path(1, 1, {});  // to itself: crosses nothing
  const nlohmann::json r = simulate(paths, {{0, 0, 1, kS}, {1e-6, 1, 1, kS}}, 2);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["left"][0].get<uint64_t>(), 10 * kUs);
  EXPECT_EQ(r["arrived"][0].get<uint64_t>(), 10 * kUs + 400000);
  EXPECT_EQ(r["left"][1].get<uint64_t>(), 1 * kUs);
  EXPECT_EQ(r["arrived"][1].get<uint64_t>(), 1 * kUs);
}

// 64 bytes of framing per 4 KiB packet on the first link only: 1 MiB is 256 packets, 16 KiB
// of overhead, and that link (not the plain one) sets the rate.
TEST_F(FlowFabricTest, CountsBytesAndBusyTimePerLinkWithWireOverhead) {
  TablePaths paths(2);
  const uint32_t framed = paths.add_link(kB), plain = paths.add_link(kB);
  paths.add_link(kB);  // crossed by nothing
  paths.spec(framed).timing.packet_overhead_bytes = 64;
  paths.spec(framed).timing.max_packet_payload_bytes = 4096;
  paths.set_path(0, 1, {framed, plain});
  const uint64_t mib = 1 << 20;
  const nlohmann::json r = simulate(paths, {{0, 0, 1, mib}, {0, 0, 1, mib}}, 2);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const uint64_t wire_ps = (2 * (mib + 256 * 64)) * 1000000000000ull / uint64_t(kB);
  EXPECT_EQ(r["left"][1].get<uint64_t>(), wire_ps);  // 2 x 1,064,960 bytes at 1e11
  EXPECT_EQ(r["link_bytes"][0].get<uint64_t>(), 2 * mib);
  EXPECT_EQ(r["link_bytes"][1].get<uint64_t>(), 2 * mib);
  EXPECT_EQ(r["link_bytes"][2].get<uint64_t>(), 0u);
  EXPECT_EQ(r["link_chunks"][0].get<uint64_t>(), 2u);
  EXPECT_EQ(r["link_busy_ps"][0].get<uint64_t>(), wire_ps);                    // full
  EXPECT_EQ(r["link_busy_ps"][1].get<uint64_t>(), 2 * mib * 1000000000000ull / uint64_t(kB));
  EXPECT_EQ(r["delivered_bytes"].get<uint64_t>(), 2 * mib);
}

// Many flows with ties everywhere (equal sizes, equal start times) on a small shared network.
std::vector<Transfer> tangled_schedule(uint32_t ranks, size_t count) {
  Lcg rng{7};
  std::vector<Transfer> s;
  for (size_t i = 0; i < count; ++i) {
    Transfer t;
    t.start_s = double(rng.next(20)) * 1e-6;
    t.source = rng.next(ranks);
    t.destination = (t.source + 1 + rng.next(ranks - 1)) % ranks;
    t.bytes = (1 + rng.next(4)) * 250000;
    s.push_back(t);
  }
  std::stable_sort(s.begin(), s.end(),
                   [](const Transfer& a, const Transfer& b) { return a.start_s < b.start_s; });
  return s;
}

// Rank r has an up-link r and a down-link ranks + r; a transfer crosses the source's up-link,
// one of two shared spine links, and the destination's down-link.
TablePaths star(uint32_t ranks) {
  TablePaths paths(ranks);
  for (uint32_t r = 0; r < 2 * ranks; ++r) paths.add_link(kB, ns(100));
  const uint32_t spine0 = paths.add_link(2 * kB, ns(200), ns(300));
  const uint32_t spine1 = paths.add_link(1.5 * kB, ns(200), ns(300));
  for (uint32_t s = 0; s < ranks; ++s)
    for (uint32_t d = 0; d < ranks; ++d)
      if (s != d) paths.set_path(s, d, {s, (s + d) % 2 ? spine1 : spine0, ranks + d});
  return paths;
}

TEST_F(FlowFabricTest, SameInputsSameEventsBitForBit) {
  const uint32_t ranks = 8;
  const TablePaths paths = star(ranks);
  const std::vector<Transfer> schedule = tangled_schedule(ranks, 400);
  const nlohmann::json a = simulate(paths, schedule, ranks);
  const nlohmann::json b = simulate(paths, schedule, ranks);
  ASSERT_FALSE(a.contains("error")) << a.dump();
  EXPECT_EQ(a.dump(), b.dump());
  uint64_t bytes = 0;
  for (const Transfer& t : schedule) bytes += t.bytes;
  EXPECT_EQ(a["delivered_bytes"].get<uint64_t>(), bytes);
  EXPECT_EQ(a["delivered"].get<uint64_t>(), schedule.size());
  // Each transfer crosses three links: each counts its bytes once.
  uint64_t link_bytes = 0;
  for (const auto& v : a["link_bytes"]) link_bytes += v.get<uint64_t>();
  EXPECT_EQ(link_bytes, 3 * bytes);
  // Every arrival is the path latency (100 + 200 + 300 + 100 ns) after its last byte left.
  for (size_t i = 0; i < schedule.size(); ++i)
    EXPECT_EQ(a["arrived"][i].get<uint64_t>() - a["left"][i].get<uint64_t>(), 700000u) << i;
}

// The same 400 transfers twice, 10 ms apart: the second wave finds every pool, heap and list
// already grown by the first and allocates nothing at all (kernel included).
TEST_F(FlowFabricTest, SteadyStateAllocatesNothing) {
  const uint32_t ranks = 8;
  const TablePaths paths = star(ranks);
  std::vector<Transfer> schedule = tangled_schedule(ranks, 400);
  const size_t wave = schedule.size();
  for (size_t i = 0; i < wave; ++i) {
    schedule.push_back(schedule[i]);
    schedule.back().start_s += 10e-3;
  }
  const nlohmann::json r = testing::run_in_child([&] {
    FlowScenario scenario("scenario", paths, schedule, ranks);
    sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
    const uint64_t first_delivered = scenario.fabric.flows_delivered();
    const uint64_t before = g_allocations;
    sc_core::sc_start();
    const uint64_t allocations = g_allocations - before;
    return nlohmann::json{{"first_delivered", first_delivered},
                          {"allocations", allocations},
                          {"delivered", scenario.fabric.flows_delivered()}};
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["first_delivered"].get<size_t>(), wave);  // the first wave was over by 5 ms
  EXPECT_EQ(r["delivered"].get<size_t>(), 2 * wave);
  EXPECT_EQ(r["allocations"].get<uint64_t>(), 0u);
}

// ---------------------------------------------------------------- in-switch reduction

// GPUs on one switch (switch 0) that reduces: GPU r's link up is 2r, its link down 2r + 1.
class SwitchPaths : public TablePaths {
 public:
  SwitchPaths(uint32_t ranks, double bandwidth, sc_core::sc_time latency) : TablePaths(ranks) {
    for (uint32_t r = 0; r < 2 * ranks; ++r) add_link(bandwidth, latency);
  }
  uint32_t switches() const override { return 1; }
  uint32_t path_to_switch(const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const override {
    links.assign(1, 2 * t.source);
    return 0;
  }
  void path_from_switch(uint32_t, const protocol::FabricTransfer& t, std::vector<uint32_t>& links) const override {
    links.assign(1, 2 * t.destination + 1);
  }
};

// Injects an in-switch reduction's chunk among `members`: step 0 a contribution, 1 a multicast.
void inject_switched(protocol::PayloadPool& pool, models::FlowFabric& fabric, models::PacketSource& source,
                     uint32_t from, uint32_t to, uint64_t bytes, uint64_t flow, protocol::TransferPurpose purpose,
                     const std::vector<int>& members, bool echo) {
  tlm::tlm_generic_payload* gp = pool.acquire();
  protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
  t = protocol::FabricTransfer{};
  t.source = from;
  t.destination = to;
  t.bytes = bytes;
  t.flow = flow;
  t.step = purpose == protocol::TransferPurpose::SwitchReduce ? 0 : 1;
  t.purpose = purpose;
  t.members = members.data();
  t.member_count = uint32_t(members.size());
  t.echo = echo;
  fabric.inject(*gp, source);
}

// Wave w (at w ms): every GPU contributes S to GPU 0's chunk (step 0); 500 us later GPU 1
// multicasts S to every GPU (step 1). Arrival times per (wave, step, rank).
class SwitchScenario : public sc_core::sc_module, public models::PacketSource, public models::FlowSink {
 public:
  SwitchScenario(sc_core::sc_module_name name, const SwitchPaths& paths, uint32_t ranks, uint64_t bytes, int waves)
      : sc_module(name), fabric("fabric", paths, &pool_), ranks_(ranks), bytes_(bytes), waves_(waves),
        arrivals_(size_t(waves) * 2 * ranks) {
    for (uint32_t r = 0; r < ranks; ++r) members_.push_back(int(r)), fabric.attach(r, *this);
    SC_HAS_PROCESS(SwitchScenario);
    SC_THREAD(drive);
  }
  void packet_left(tlm::tlm_generic_payload&) override {}
  void flow_arrived(uint32_t rank, tlm::tlm_generic_payload& gp) override {
    const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
    const size_t k = (size_t(t.flow) * 2 + t.step) * ranks_ + rank;
    arrivals_[k].first = sc_core::sc_time_stamp().value();
    ++arrivals_[k].second;
    gp.release();  // as the collective engine does
  }
  // When the chunk of (wave, step) reached `rank` (the last one), and how many did.
  const std::pair<uint64_t, int>& arrival(int wave, int step, uint32_t rank) const {
    return arrivals_[(size_t(wave) * 2 + step) * ranks_ + rank];
  }
  const protocol::PayloadPool& pool() const { return pool_; }

  models::FlowFabric fabric;

 private:
  void inject(uint32_t source, uint32_t destination, int wave, protocol::TransferPurpose purpose) {
    inject_switched(pool_, fabric, *this, source, destination, bytes_, uint64_t(wave), purpose, members_, false);
  }
  void drive() {
    for (int w = 0; w < waves_; ++w) {
      wait(sc_core::sc_time(w, sc_core::SC_MS) - sc_core::sc_time_stamp());
      for (uint32_t r = 0; r < ranks_; ++r) inject(r, 0, w, protocol::TransferPurpose::SwitchReduce);
      wait(sc_core::sc_time(500, sc_core::SC_US));
      inject(1, 1, w, protocol::TransferPurpose::SwitchMulticast);
    }
  }

  protocol::PayloadPool pool_;
  uint32_t ranks_;
  uint64_t bytes_;
  int waves_;
  std::vector<int> members_;
  std::vector<std::pair<uint64_t, int>> arrivals_;  // by (wave, step, rank)
};

// The switch adds up the contributions: one sum leaves for the owner, S on its link down where
// point-to-point transfers would put n S; a multicast goes up once and down once per member.
// Each leg is S/B plus its link's latency. The second wave allocates nothing.
TEST_F(FlowFabricTest, ASwitchThatReducesSendsOneSumAndOneCopyPerMember) {
  const uint32_t ranks = 4;
  const SwitchPaths paths(ranks, kB, ns(500));
  const nlohmann::json r = testing::run_in_child([&] {
    SwitchScenario scenario("scenario", paths, ranks, kS, 2);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    const uint64_t before = g_allocations;
    sc_core::sc_start();
    nlohmann::json j;
    j["allocations"] = g_allocations - before;
    for (int w = 0; w < 2; ++w)
      for (int step = 0; step < 2; ++step)
        for (uint32_t k = 0; k < ranks; ++k) {
          j["arrived"].push_back(scenario.arrival(w, step, k).first);
          j["count"].push_back(scenario.arrival(w, step, k).second);
        }
    for (uint32_t l = 0; l < scenario.fabric.links(); ++l) j["link_bytes"].push_back(scenario.fabric.bytes_carried(l));
    j["reductions"] = scenario.fabric.reductions();
    j["multicasts"] = scenario.fabric.multicasts();
    j["payloads_in_use"] = scenario.pool().in_use();
    return j;
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const uint64_t leg = 10 * kUs + 500000;  // S/B + latency
  for (int w = 0; w < 2; ++w) {
    const uint64_t start = uint64_t(w) * 1000 * kUs;
    for (uint32_t k = 0; k < ranks; ++k) {
      const size_t reduce = (size_t(w) * 2 + 0) * ranks + k, multicast = (size_t(w) * 2 + 1) * ranks + k;
      EXPECT_EQ(r["count"][reduce].get<int>(), k == 0 ? 1 : 0) << w << " " << k;
      if (k == 0) {
        EXPECT_EQ(r["arrived"][reduce].get<uint64_t>(), start + 2 * leg);
      }
      EXPECT_EQ(r["count"][multicast].get<int>(), 1) << w << " " << k;
      EXPECT_EQ(r["arrived"][multicast].get<uint64_t>(), start + 500 * kUs + 2 * leg) << w << " " << k;
    }
  }
  for (uint32_t k = 0; k < ranks; ++k) {
    EXPECT_EQ(r["link_bytes"][2 * k].get<uint64_t>(), 2 * (kS + (k == 1 ? kS : 0))) << "up " << k;
    EXPECT_EQ(r["link_bytes"][2 * k + 1].get<uint64_t>(), 2 * (kS + (k == 0 ? kS : 0))) << "down " << k;
  }
  EXPECT_EQ(r["reductions"].get<uint64_t>(), 2u);
  EXPECT_EQ(r["multicasts"].get<uint64_t>(), 2u);
  EXPECT_EQ(r["payloads_in_use"].get<uint64_t>(), 0u);
  EXPECT_EQ(r["allocations"].get<uint64_t>(), 0u);
}

// An NVLS all-reduce among `ranks` GPUs on one switch: every GPU sends each owner its shard
// (step 0), and when its own sum is back multicasts it (step 1). Echoed, GPU 0 alone makes it
// (FabricTransfer::echo): its transfers stand for every member's.
class NvlsScenario : public sc_core::sc_module, public models::PacketSource, public models::FlowSink {
 public:
  NvlsScenario(sc_core::sc_module_name name, const SwitchPaths& paths, uint32_t ranks, bool echo)
      : sc_module(name), fabric("fabric", paths, &pool_), ranks_(ranks), echo_(echo), arrivals_(2 * ranks) {
    for (uint32_t r = 0; r < ranks; ++r) members_.push_back(int(r)), fabric.attach(r, *this);
    SC_HAS_PROCESS(NvlsScenario);
    SC_THREAD(drive);
  }
  void packet_left(tlm::tlm_generic_payload&) override {}
  void flow_arrived(uint32_t rank, tlm::tlm_generic_payload& gp) override {
    const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
    auto& a = arrivals_[size_t(t.step) * ranks_ + rank];
    a.first = sc_core::sc_time_stamp().value();
    ++a.second;
    const bool sum = t.step == 0;
    gp.release();
    if (sum) inject(rank, rank, protocol::TransferPurpose::SwitchMulticast);
  }
  // When the last chunk of `step` reached `rank`, and how many did.
  const std::pair<uint64_t, int>& arrival(int step, uint32_t rank) const { return arrivals_[size_t(step) * ranks_ + rank]; }
  const protocol::PayloadPool& pool() const { return pool_; }

  models::FlowFabric fabric;

 private:
  void inject(uint32_t source, uint32_t destination, protocol::TransferPurpose purpose) {
    inject_switched(pool_, fabric, *this, source, destination, kS, 0, purpose, members_, echo_);
  }
  void drive() {
    for (uint32_t r = 0; r < (echo_ ? 1 : ranks_); ++r)
      for (uint32_t owner = 0; owner < ranks_; ++owner) inject(r, owner, protocol::TransferPurpose::SwitchReduce);
  }

  protocol::PayloadPool pool_;
  uint32_t ranks_;
  bool echo_;
  std::vector<int> members_;
  std::vector<std::pair<uint64_t, int>> arrivals_;  // by (step, rank)
};

// The echoed call: GPU 0 gets its sum and every owner's copy when it does in the full call (n
// shards up its link, then its sum down, then n copies down), and every link reports the bytes
// the full call puts on it, the other members' through the echo's images.
TEST_F(FlowFabricTest, AnEchoedNvlsCallArrivesAndCarriesAsEveryMembersOwn) {
  const uint32_t ranks = 4;
  const SwitchPaths paths(ranks, kB, ns(500));
  const auto simulate = [&](bool echo) {
    return testing::run_in_child([&] {
      NvlsScenario scenario("scenario", paths, ranks, echo);
      sc_core::sc_start();
      nlohmann::json j;
      for (int step = 0; step < 2; ++step) {
        j["arrived"].push_back(scenario.arrival(step, 0).first);
        j["count"].push_back(scenario.arrival(step, 0).second);
      }
      for (uint32_t l = 0; l < scenario.fabric.links(); ++l) j["link_bytes"].push_back(scenario.fabric.bytes_carried(l));
      j["reductions"] = scenario.fabric.reductions();
      j["multicasts"] = scenario.fabric.multicasts();
      j["payloads_in_use"] = scenario.pool().in_use();
      return j;
    });
  };
  const nlohmann::json full = simulate(false), echo = simulate(true);
  ASSERT_FALSE(full.contains("error")) << full.dump();
  ASSERT_FALSE(echo.contains("error")) << echo.dump();
  const uint64_t leg = 10 * kUs + 500000;  // S/B + latency
  EXPECT_EQ(full["arrived"][0].get<uint64_t>(), ranks * 10 * kUs + 500000 + leg);  // n shards up, the sum down
  EXPECT_EQ(full["count"], nlohmann::json::array({1, int(ranks)}));
  EXPECT_EQ(echo["arrived"], full["arrived"]);
  EXPECT_EQ(echo["count"], full["count"]);
  EXPECT_EQ(echo["link_bytes"], full["link_bytes"]);
  for (uint32_t l = 0; l < 2 * ranks; ++l)
    EXPECT_EQ(full["link_bytes"][l].get<uint64_t>(), (ranks + 1) * kS) << l;  // n shards and a multicast up; a sum and n copies down
  EXPECT_EQ(echo["reductions"], full["reductions"]);
  EXPECT_EQ(echo["multicasts"], full["multicasts"]);
  EXPECT_EQ(echo["payloads_in_use"].get<uint64_t>(), 0u);
}

// 10,000 flows at once on 100 up-links and 100 down-links, exactly 100 flows on each link: each
// gets B/100 and all end at 100 S/B = 1 ms.
TEST_F(FlowFabricTest, TenThousandConcurrentFlows) {
  const uint32_t ranks = 100;
  TablePaths paths(ranks);
  for (uint32_t r = 0; r < 2 * ranks; ++r) paths.add_link(kB);
  std::vector<Transfer> schedule;
  for (uint32_t i = 0; i < 10000; ++i) {
    const uint32_t s = i % ranks, d = (s + i / ranks) % ranks;
    paths.set_path(s, d, {s, ranks + d});
    schedule.push_back({0, s, d, kS});
  }
  const nlohmann::json r = simulate(paths, schedule, ranks);
  ASSERT_FALSE(r.contains("error")) << r.dump().substr(0, 300);
  EXPECT_EQ(r["delivered_bytes"].get<uint64_t>(), 10000 * kS);
  EXPECT_EQ(r["delivered"].get<uint64_t>(), 10000u);
  EXPECT_EQ(r["active"].get<uint64_t>(), 0u);
  EXPECT_EQ(r["in_flight"].get<uint64_t>(), 0u);
  EXPECT_EQ(r["payloads_in_use"].get<uint64_t>(), 0u);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(r["left"][i].get<uint64_t>(), 1000 * kUs) << i;
  for (uint32_t l = 0; l < 2 * ranks; ++l)
    ASSERT_EQ(r["link_bytes"][l].get<uint64_t>(), 100 * kS) << l;
}

}  // namespace
}  // namespace tessera
