// Reading the compute-model files of calibration/data/compute (docs/compute-model.md).
#include <filesystem>
#include <sstream>

#include "calibration/compute_model.h"
#include "workloads/errors.h"
#include "workloads/yaml_reader.h"

#ifndef TESSERA_COMPUTE_DATA_DIR
#define TESSERA_COMPUTE_DATA_DIR "calibration/data/compute"
#endif

namespace tessera::calibration {
namespace {

using workloads::InputError;
using workloads::YamlMap;

double positive(YamlMap& map, const std::string& key, double fallback, double at_most = 1e300) {
  const double v = map.number(key, fallback);
  if (!(v > 0) || v > at_most) {
    std::ostringstream s;
    s << "must be a number in (0, " << at_most << "] (got " << v << ")";
    map.fail(key, s.str());
  }
  return v;
}

std::vector<std::pair<int, int>> read_tiles(YamlMap& map, const std::string& file) {
  const auto node = map.get("tiles");
  if (!node || !node->IsSequence() || node->size() == 0)
    map.fail("tiles", "must be a list of [rows, columns] output tiles");
  std::vector<std::pair<int, int>> tiles;
  for (const YAML::Node& t : *node) {
    if (!t.IsSequence() || t.size() != 2)
      throw InputError(workloads::where(file, t) + ": key 'tiles': each tile is [rows, columns]");
    const int rows = t[0].as<int>(0), cols = t[1].as<int>(0);
    if (rows < 8 || cols < 8 || rows > 1024 || cols > 1024)
      throw InputError(workloads::where(file, t) + ": key 'tiles': rows and columns in [8, 1024]");
    tiles.emplace_back(rows, cols);
  }
  return tiles;
}

GemmParameters read_gemm(const YAML::Node& node, const std::string& file) {
  YamlMap map(node, file, "gemm");
  GemmParameters g;
  g.tiles = read_tiles(map, file);
  g.mainloop_efficiency = positive(map, "mainloop_efficiency", 0, 1);
  g.l2_bandwidth = positive(map, "l2_bandwidth_gbps", 0) * 1e9;
  g.tile_overhead_s = map.number("tile_overhead_us", 0) * 1e-6;
  if (!(g.tile_overhead_s >= 0) || g.tile_overhead_s > 1e-3)
    map.fail("tile_overhead_us", "must be in [0, 1000]");
  g.overlap_exponent = positive(map, "overlap_exponent", 2, 64);
  if (g.overlap_exponent < 1) map.fail("overlap_exponent", "must be at least 1");
  g.unaligned_efficiency = positive(map, "unaligned_efficiency", 1, 1);
  g.launch_s = positive(map, "launch_us", 0, 1000) * 1e-6;
  map.finish();
  return g;
}

MemoryKernelParameters read_memory(const YAML::Node& node, const std::string& file) {
  YamlMap map(node, file, "memory");
  MemoryKernelParameters m;
  m.stream_bandwidth = positive(map, "stream_gbps", 0) * 1e9;
  m.launch_s = positive(map, "launch_us", 0, 1000) * 1e-6;
  m.efficiency.fill(1.0);
  if (const auto eff = map.get("efficiency")) {
    YamlMap kinds(*eff, file, "memory.efficiency");
    for (int i = 0; i < workloads::kKernelKinds; ++i) {
      const std::string name = workloads::to_string(static_cast<workloads::KernelKind>(i));
      if (kinds.has(name)) m.efficiency[i] = positive(kinds, name, 1, 1.2);
    }
    kinds.finish();
  }
  map.finish();
  return m;
}

std::string file_of(const std::string& gpu_or_path) {
  if (gpu_or_path.find('/') != std::string::npos || (gpu_or_path.size() > 5 &&
      gpu_or_path.substr(gpu_or_path.size() - 5) == ".yaml"))
    return gpu_or_path;
  return compute_data_directory() + "/" + gpu_or_path + ".yaml";
}

std::string known_gpus() {
  std::string names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(compute_data_directory(), ec))
    if (e.path().extension() == ".yaml") names += (names.empty() ? "" : ", ") + e.path().stem().string();
  return names;
}

}  // namespace

std::string compute_data_directory() {
  if (const char* dir = std::getenv("TESSERA_COMPUTE_DATA")) return dir;
  return TESSERA_COMPUTE_DATA_DIR;
}

bool has_compute_parameters(const std::string& gpu) {
  std::error_code ec;
  return std::filesystem::is_regular_file(file_of(gpu), ec);
}

ComputeParameters load_compute_parameters(const std::string& gpu_or_path) {
  const std::string file = file_of(gpu_or_path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw InputError("no compute model for GPU '" + gpu_or_path + "' (" + file +
                     " does not exist; known: " + known_gpus() + ")");
  YamlMap map(workloads::parse_yaml(workloads::read_text_file(file), file), file, "compute model");
  ComputeParameters p;
  p.file = file;
  p.gpu = map.string("gpu", "");
  if (p.gpu.empty()) map.fail("gpu", "must name the GPU type");
  const auto gemm = map.get("gemm");
  if (!gemm) map.fail("gemm", "is required");
  p.gemm = read_gemm(*gemm, file);
  const auto memory = map.get("memory");
  if (!memory) map.fail("memory", "is required");
  p.memory = read_memory(*memory, file);
  if (const auto flash = map.get("flash_attention_tflops")) {
    YamlMap rates(*flash, file, "flash_attention_tflops");
    for (workloads::DType d : {workloads::DType::FP32, workloads::DType::TF32, workloads::DType::FP16,
                               workloads::DType::BF16, workloads::DType::FP8})
      if (rates.has(workloads::to_string(d)))
        p.flash_attention_flops[static_cast<size_t>(d)] =
            positive(rates, workloads::to_string(d), 0, 1e5) * 1e12;
    rates.finish();
  }
  map.finish();
  return p;
}

}  // namespace tessera::calibration
