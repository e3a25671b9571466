// The default scenario's data-parallel GPT job keeps its shape and its FLOP count.
#include <gtest/gtest.h>

#include "test_helpers.h"
#include "workloads/data_parallel_gpt.h"

using namespace tessera::workloads;
using namespace tessera::workloads::testing;

TEST(DataParallelGpt, ShapeFlopsAndCompletion) {
  GptConfig m;
  m.layers = 4;
  m.hidden = 256;
  m.heads = 8;
  m.seq_length = 128;
  m.vocab = 1024;
  DataParallelConfig s;
  s.dp = 4;
  s.micro_batch = 2;
  s.global_batch = 16;
  s.bucket_mb = 0.5;
  const Job job = build_data_parallel_gpt(m, s);
  ASSERT_NO_THROW(validate(job));
  EXPECT_EQ(job.stream_names, (std::vector<std::string>{"compute", "dp_comm"}));
  EXPECT_EQ(job.communicators.at(0).name, "dp");
  EXPECT_TRUE(near_rel(job.info.model_flops, megatron_model_flops(16, 128, 4, 256, 1024)));
  const TimelineResult r =
      run_timeline(job, [](const Job&, const Rank&, const Op& op) { return op.kind == OpKind::Compute ? 1.0 : 0.0; });
  EXPECT_TRUE(r.completed) << r.deadlock;
}
