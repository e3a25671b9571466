// The analytic walk's event queues (analytic/event_queue.h): the event queue gives events in
// exactly the order std::priority_queue gives them (earliest first, ties in push order),
// whatever the mix of pushes and pops; the keyed queue's top is its earliest entry, whatever
// moves and erasures came before.
#include "analytic/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <queue>
#include <random>
#include <vector>

namespace {

using tessera::analytic::EventQueue;

struct E {
  double time = 0;
  uint64_t sequence = 0;
  bool operator>(const E& o) const { return time != o.time ? time > o.time : sequence > o.sequence; }
};

TEST(EventQueue, TiesComeOutInPushOrder) {
  EventQueue<E> q;
  uint64_t next = 0;
  for (double t : {2.0, 1.0, 2.0, 1.0, 3.0, 1.0}) q.push(E{t, next++});
  std::vector<uint64_t> order;
  while (!q.empty()) {
    order.push_back(q.top().sequence);
    q.pop();
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 3, 5, 0, 2, 4}));
}

TEST(EventQueue, SameOrderAsPriorityQueueUnderRandomPushesAndPops) {
  std::mt19937_64 random(12345);
  for (int trial = 0; trial < 50; ++trial) {
    EventQueue<E> q;
    std::priority_queue<E, std::vector<E>, std::greater<E>> reference;
    uint64_t next = 0;
    double now = 0;
    // Times from a few values a little ahead of the last one taken off, as the walk pushes
    // them, so that ties are common.
    std::uniform_int_distribution<int> ahead(0, 3), action(0, 2);
    for (int step = 0; step < 5000; ++step) {
      if (action(random) > 0 || reference.empty()) {
        const E e{now + ahead(random), next++};
        q.push(e);
        reference.push(e);
      } else {
        ASSERT_EQ(q.size(), reference.size());
        ASSERT_EQ(q.top().sequence, reference.top().sequence) << "trial " << trial << " step " << step;
        now = reference.top().time;
        q.pop();
        reference.pop();
      }
    }
    while (!reference.empty()) {
      ASSERT_EQ(q.top().sequence, reference.top().sequence);
      q.pop();
      reference.pop();
    }
    EXPECT_TRUE(q.empty());
  }
}

// The keyed queue (the walk's running kernels by their end): under random moves, adds and
// erasures of keys, its top is always the earliest entry of a plain map of the same entries.
TEST(KeyedQueue, TopIsTheEarliestEntryWhateverMovesAndErasures) {
  using tessera::analytic::KeyedQueue;
  std::mt19937_64 random(777);
  constexpr uint32_t kKeys = 70;
  for (int trial = 0; trial < 20; ++trial) {
    KeyedQueue q(kKeys);
    std::map<uint32_t, std::pair<double, uint64_t>> reference;  // key -> (time, sequence)
    uint64_t next = 0;
    std::uniform_int_distribution<uint32_t> key(0, kKeys - 1);
    std::uniform_int_distribution<int> time(0, 9), action(0, 3);
    for (int step = 0; step < 4000; ++step) {
      const uint32_t k = key(random);
      if (action(random) == 0) {
        q.erase(k);
        reference.erase(k);
      } else {
        const double t = time(random);  // often equal: ties go by sequence
        q.set(k, t, next);
        reference[k] = {t, next++};
      }
      ASSERT_EQ(q.empty(), reference.empty());
      for (uint32_t c = 0; c < kKeys; ++c) ASSERT_EQ(q.contains(c), reference.count(c) == 1);
      if (reference.empty()) continue;
      auto best = reference.begin();
      for (auto it = reference.begin(); it != reference.end(); ++it)
        if (it->second < best->second) best = it;
      ASSERT_EQ(q.top().key, best->first) << "trial " << trial << " step " << step;
      ASSERT_EQ(q.top().time, best->second.first);
      ASSERT_EQ(q.top().sequence, best->second.second);
    }
  }
}

}  // namespace
