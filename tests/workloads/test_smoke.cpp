#include <gtest/gtest.h>

#include "test_helpers.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

TEST(Smoke, SmallGptRuns) {
  ModelSpec m = gpt(4, 256, 8, 128, 1024);
  Strategy s;
  s.tp = 2; s.pp = 2; s.dp = 2; s.global_batch = 8; s.micro_batch = 1;
  CompiledJob c = compile(m, s);
  validate(c.job);
  auto res = run_timeline(c.job, [](const Job&, const Rank&, const Op& op) { return op.kind == OpKind::Compute ? 1.0 : 0.0; });
  EXPECT_TRUE(res.completed) << res.deadlock;
}
