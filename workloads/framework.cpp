#include "workloads/framework.h"

#include <algorithm>
#include <filesystem>

#include "workloads/limits.h"
#include "workloads/strategy.h"
#include "workloads/yaml_reader.h"

#ifndef TESSERA_FRAMEWORK_DIR
#define TESSERA_FRAMEWORK_DIR "workloads/frameworks"
#endif

namespace tessera::workloads {

namespace {
std::string framework_directory() {
  if (const char* dir = std::getenv("TESSERA_FRAMEWORKS")) return dir;
  return TESSERA_FRAMEWORK_DIR;
}
}  // namespace

std::vector<std::string> list_frameworks() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(framework_directory(), ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Framework load_framework(const std::string& name_or_path) {
  const bool path = name_or_path.find('/') != std::string::npos ||
                    std::filesystem::path(name_or_path).extension() == ".yaml";
  const std::string file = path ? name_or_path : framework_directory() + "/" + name_or_path + ".yaml";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    std::string known;
    for (const std::string& n : list_frameworks()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("--framework: unknown framework '" + name_or_path + "' (known: " + known +
                     ", or a YAML file)");
  }
  YamlMap map(parse_yaml(read_text_file(file), file), file, "framework");
  Framework f;
  f.file = file;
  f.name = map.string("name", std::filesystem::path(file).stem().string());
  f.fused_bias_activation = map.boolean("fused_bias_activation", f.fused_bias_activation);
  f.fused_bias_dropout_add = map.boolean("fused_bias_dropout_add", f.fused_bias_dropout_add);
  f.fused_softmax = map.boolean("fused_softmax", f.fused_softmax);
  f.fused_grad_accumulation = map.boolean("fused_grad_accumulation", f.fused_grad_accumulation);
  f.fused_gemm_bias = map.boolean("fused_gemm_bias", f.fused_gemm_bias);
  f.fused_gemm_bias_grad = map.boolean("fused_gemm_bias_grad", f.fused_gemm_bias_grad);
  f.norm_backward_passes = int(map.integer("norm_backward_passes", f.norm_backward_passes, limits::integers(1, 2)));
  f.gradient_clipping = map.boolean("gradient_clipping", f.gradient_clipping);
  f.loss_scaling = map.boolean("loss_scaling", f.loss_scaling);
  f.host_launch_us = map.number("host_launch_us", f.host_launch_us);
  if (!(f.host_launch_us >= 0) || f.host_launch_us > 1e4)
    map.fail("host_launch_us", "must be in [0, 10000] microseconds (got " +
                                   std::to_string(f.host_launch_us) + ")");
  f.overlap_grad_reduce = map.boolean("overlap_grad_reduce", f.overlap_grad_reduce);
  f.flash_attention = map.boolean("flash_attention", f.flash_attention);
  f.synchronous_p2p = map.boolean("synchronous_p2p", f.synchronous_p2p);
  f.p2p_scatter_gather = map.boolean("p2p_scatter_gather", f.p2p_scatter_gather);
  f.zero3_fetch = map.string("zero3_fetch", f.zero3_fetch);
  if (f.zero3_fetch != "unit" && f.zero3_fetch != "tensor")
    map.fail("zero3_fetch", "must be unit or tensor (got " + f.zero3_fetch + ")");
  f.zero3_persistence_threshold = map.number("zero3_persistence_threshold", f.zero3_persistence_threshold);
  if (!(f.zero3_persistence_threshold >= 0) || f.zero3_persistence_threshold > 1e12)
    map.fail("zero3_persistence_threshold", "must be in [0, 1e12] elements (got " +
                                                std::to_string(f.zero3_persistence_threshold) + ")");
  f.zero3_prefetch_elements = map.number("zero3_prefetch_elements", f.zero3_prefetch_elements);
  if (!(f.zero3_prefetch_elements == -1 || (f.zero3_prefetch_elements >= 0 && f.zero3_prefetch_elements <= 1e15)))
    map.fail("zero3_prefetch_elements", "must be -1 (no limit) or in [0, 1e15] elements (got " +
                                            std::to_string(f.zero3_prefetch_elements) + ")");
  f.zero3_prefetch_units =
      int(map.integer("zero3_prefetch_units", f.zero3_prefetch_units, limits::integers(-1, 1 << 20)));
  f.zero3_regather_for_recompute = map.boolean("zero3_regather_for_recompute", f.zero3_regather_for_recompute);
  f.collective_tensor_lists = map.boolean("collective_tensor_lists", f.collective_tensor_lists);
  f.zero3_grad_reduction = map.string("zero3_grad_reduction", f.zero3_grad_reduction);
  if (f.zero3_grad_reduction != "fetch" && f.zero3_grad_reduction != "buckets" &&
      f.zero3_grad_reduction != "allreduce_buckets")
    map.fail("zero3_grad_reduction", "must be fetch, buckets or allreduce_buckets (got " + f.zero3_grad_reduction + ")");
  f.grad_bucket_mb = map.number("grad_bucket_mb", f.grad_bucket_mb);
  if (!(f.grad_bucket_mb >= 0) || f.grad_bucket_mb > (1 << 20))
    map.fail("grad_bucket_mb", "must be in [0, 1048576] MiB (got " + std::to_string(f.grad_bucket_mb) + ")");
  map.finish();
  return f;
}

void apply_framework_defaults(Strategy& strategy, const Framework& framework) {
  strategy.overlap_grad_reduce = framework.overlap_grad_reduce;
  strategy.flash_attention = framework.flash_attention;
  if (framework.grad_bucket_mb > 0) strategy.bucket_mb = framework.grad_bucket_mb;
}

}  // namespace tessera::workloads
