// Benchmark: the strategy space of GPT-3 175B on 128 DGX A100 (1,024 A100 80 GB, global batch
// 1536), walked as `tessera search` walks it with its default dimensions: every candidate
// enumerated, checked (resolve) and its memory estimated (estimate_stage_memory, what tessera
// run checks), those recomputing more than a twin that fits set aside. Prints the counts, the most common reasons and the wall time. The simulation of
// the kept candidates is `tessera search`'s (docs/search.md).
#include <chrono>
#include <cstdio>
#include <map>

#include "workloads/strategy_space.h"
#include "workloads/workload.h"

using namespace tessera::workloads;

int main() {
  const auto start = std::chrono::steady_clock::now();
  const ModelSpec model = load_model("gpt3-175b");
  const Framework framework = load_framework("megatron-core");
  const SpaceDimensions dims = complete_dimensions({}, model, 1024, 8);
  const SpaceWalk w = walk_strategy_space(model, default_strategy(model, &framework), dims, 1024, 1536,
                                          80.0 * 1024 * 1024 * 1024);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("search space of gpt3-175b on 1024 A100-80GB, global batch 1536: %zu candidates, %zu redundant, "
              "%zu invalid, %zu out of memory, %zu dominated, %zu to simulate; walked in %.2f s\n",
              w.enumerated, w.redundant, w.invalid_total(), w.out_of_memory.size(), w.dominated.size(), w.kept.size(),
              seconds);
  std::multimap<size_t, std::string, std::greater<size_t>> reasons;
  for (const auto& [reason, n] : w.invalid) reasons.emplace(n, reason);
  int shown = 0;
  for (const auto& [n, reason] : reasons)
    if (shown++ < 3) std::printf("  invalid %zu: %s\n", n, reason.c_str());
  return 0;
}
