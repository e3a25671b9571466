// Benchmark: compile GPT-3 175B for 1,024 GPUs (tp 8, pp 16, dp 8, global batch 1536,
// micro-batch 1, interleaved with 2 chunks per stage, full recompute) and print wall time and
// peak resident memory. Arguments KEY=VALUE change strategy options on top (e.g.
// embedding-tp=2).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include "workloads/workload.h"

using namespace tessera::workloads;

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  ModelSpec model = load_model("gpt3-175b");
  Strategy s = default_strategy(model);
  for (auto [k, v] : std::initializer_list<std::pair<const char*, const char*>>{
           {"tp", "8"}, {"pp", "16"}, {"dp", "8"}, {"micro-batch", "1"}, {"global-batch", "1536"},
           {"schedule", "interleaved"}, {"vpp", "2"}, {"recompute", "full"}, {"dtype", "fp16"},
           {"sequence-parallel", "true"}})
    set_strategy_option(s, k, v);
  std::string extra;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "usage: %s [KEY=VALUE ...] (strategy options)\n", argv[0]);
      return 2;
    }
    try {
      set_strategy_option(s, arg.substr(0, eq), arg.substr(eq + 1));
    } catch (const InputError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    extra += ", " + arg;
  }
  CompiledJob compiled;
  try {
    compiled = compile(model, s, 1024);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::set<const Program*> programs;
  size_t ops = 0;
  for (const Rank& r : compiled.job.ranks)
    if (programs.insert(r.program.get()).second) ops += r.program->ops.size();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("gpt3-175b on 1024 GPUs (tp 8, pp 16, dp 8, gb 1536, mb 1, interleaved vpp 2%s)\n",
              extra.c_str());
  std::printf("ranks %zu, distinct programs %zu, ops %zu, communicators %zu, names %zu\n",
              compiled.job.ranks.size(), programs.size(), ops, compiled.job.communicators.size(),
              compiled.job.names.size());
  std::printf("model %.4g FLOPs, hardware %.4g FLOPs, peak memory rank 0 %.2f GiB\n",
              compiled.job.info.model_flops, compiled.job.info.hardware_flops,
              compiled.memory[0].peak / (1024.0 * 1024 * 1024));
  std::printf("compile wall time %.3f s, peak RSS %.1f MiB\n", seconds, usage.ru_maxrss / 1024.0);
  return 0;
}
