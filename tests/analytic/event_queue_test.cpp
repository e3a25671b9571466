// The analytic walk's event queue (analytic/event_queue.h): it gives events in exactly the order
// std::priority_queue gives them (earliest first, ties in push order), whatever the mix of
// pushes and pops.
#include "analytic/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
