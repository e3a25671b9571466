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
  map.finish();
  return f;
}

void apply_framework_defaults(Strategy& strategy, const Framework& framework) {
  strategy.overlap_grad_reduce = framework.overlap_grad_reduce;
  strategy.flash_attention = framework.flash_attention;
}

}  // namespace tessera::workloads
