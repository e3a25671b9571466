// An op's dependency list (workloads/dep_list.h): up to three ids in place, more on the heap,
// with the value semantics of a std::vector.
#include "workloads/dep_list.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace tessera::workloads {
namespace {

std::vector<OpId> ids(const DepList& d) { return std::vector<OpId>(d.begin(), d.end()); }

TEST(DepList, HoldsAnyNumberInOrder) {
  for (uint32_t n : {0u, 1u, 3u, 4u, 5u, 8u, 9u, 100u}) {
    DepList d;
    std::vector<OpId> expected;
    for (uint32_t i = 0; i < n; ++i) {
      d.push_back(7 * i + 1);
      expected.push_back(7 * i + 1);
      ASSERT_EQ(ids(d), expected) << "after " << i + 1 << " of " << n;
    }
    EXPECT_EQ(d.size(), n);
    EXPECT_EQ(d.empty(), n == 0);
    if (n > 0) {
      EXPECT_EQ(d[n - 1], 7 * (n - 1) + 1);
    }
  }
}

TEST(DepList, CopiesAndMovesAreValues) {
  for (uint32_t n : {2u, 3u, 6u}) {
    DepList a;
    for (uint32_t i = 0; i < n; ++i) a.push_back(i);
    DepList b = a;  // a copy owns its own ids
    b.push_back(99);
    EXPECT_EQ(a.size(), n);
    EXPECT_EQ(b.size(), n + 1);
    EXPECT_NE(a, b);
    DepList c = std::move(b);  // a move takes them and leaves the source empty
    EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_EQ(c.size(), n + 1);
    EXPECT_EQ(c[n], 99u);
    c = a;
    EXPECT_EQ(c, a);
    a = std::move(c);
    EXPECT_EQ(a.size(), n);
    a = DepList{5, 6, 7, 8, 9};
    EXPECT_EQ(ids(a), (std::vector<OpId>{5, 6, 7, 8, 9}));
    const std::vector<OpId> v{1, 2};
    a.assign(v.begin(), v.end());
    EXPECT_EQ(ids(a), v);
  }
}

}  // namespace
}  // namespace tessera::workloads
