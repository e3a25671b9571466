#include "calibration/kernel_table.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "platforms/platform_file.h"
#include "workloads/errors.h"
#include "workloads/yaml_reader.h"

namespace tessera::calibration {

using workloads::DType;
using workloads::InputError;
using workloads::KernelKind;

bool is_gemm_kind(KernelKind kind) {
  return kind == KernelKind::Gemm || kind == KernelKind::AttentionGemm;
}

bool KernelKey::operator==(const KernelKey& o) const {
  if (kind != o.kind || dtype != o.dtype) return false;
  if (is_gemm_kind(kind)) return batch == o.batch && m == o.m && n == o.n && k == o.k;
  return elements == o.elements;
}

bool KernelKey::operator<(const KernelKey& o) const {
  auto tie = [](const KernelKey& x) {
    const bool gemm = is_gemm_kind(x.kind);
    return std::make_tuple(x.kind, x.dtype, gemm ? x.batch : 0, gemm ? x.m : 0, gemm ? x.n : 0,
                           gemm ? x.k : 0, gemm ? 0 : x.elements);
  };
  return tie(*this) < tie(o);
}

double KernelKey::flops() const {
  return is_gemm_kind(kind) ? 2.0 * double(batch) * double(m) * double(n) * double(k) : 0.0;
}

std::string KernelKey::shape() const {
  std::ostringstream s;
  if (kind == KernelKind::AttentionGemm) s << "batch " << batch << ", ";
  if (is_gemm_kind(kind)) {
    if (kind == KernelKind::Gemm && batch != 1) s << "batch " << batch << ", ";
    s << "m " << m << ", n " << n << ", k " << k;
  } else {
    s << elements << " elements";
  }
  return s.str();
}

void KernelTable::add(const MeasuredKernel& kernel) {
  for (MeasuredKernel& present : kernels_) {
    if (!(present.key == kernel.key)) continue;
    const double samples = double(present.samples) + double(kernel.samples);
    present.seconds = (present.seconds * present.samples + kernel.seconds * kernel.samples) / samples;
    present.samples += kernel.samples;
    return;
  }
  kernels_.push_back(kernel);
}

std::optional<double> KernelTable::seconds(const KernelKey& key) const {
  for (const MeasuredKernel& present : kernels_)
    if (present.key == key) return present.seconds;
  return std::nullopt;
}

void KernelTable::sort() {
  std::stable_sort(kernels_.begin(), kernels_.end(),
                   [](const MeasuredKernel& a, const MeasuredKernel& b) { return a.key < b.key; });
}

// ---------------------------------------------------------------------------------------------
// Reading.

namespace {

const char* kGemmFields = "kind, dtype, batch, m, n, k, us, samples";
const char* kOtherFields = "kind, dtype, elements, us, samples";

// One mapping of the file, read key by key; every error is "FILE:LINE: KEY: message".
class Entry {
 public:
  Entry(const YAML::Node& node, const std::string& file, std::string path)
      : node_(node), file_(file), path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) const {
    throw InputError(workloads::where(file_, at) + ": " + dotted(key) + ": " + what);
  }
  std::string dotted(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // Rejects a key written twice and any key not in `accepted`.
  void check_keys(const std::set<std::string>& accepted, const std::string& accepted_text) const {
    std::set<std::string> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (!seen.insert(key).second) fail(it->first, key, "duplicate key");
      if (!accepted.count(key))
        fail(it->first, key, "unknown key (accepted: " + accepted_text + ")");
    }
  }

  std::optional<YAML::Node> find(const std::string& key) const {
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (it->first.Scalar() == key) return it->second;
    return std::nullopt;
  }

  YAML::Node required(const std::string& key) const {
    std::optional<YAML::Node> v = find(key);
    if (!v || v->IsNull()) fail(node_, key, "missing");
    return *v;
  }

  std::string text(const std::string& key) const {
    const YAML::Node v = required(key);
    if (!v.IsScalar()) fail(v, key, "expected a single value");
    return v.Scalar();
  }

  int64_t positive_integer(const YAML::Node& v, const std::string& key) const {
    int64_t value = 0;
    bool ok = v.IsScalar();
    try {
      if (ok) value = v.as<int64_t>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
    if (!ok || value <= 0)
      fail(v, key, "expected a positive integer (got " + (v.IsScalar() ? v.Scalar() : "...") + ")");
    return value;
  }

  double positive_number(const YAML::Node& v, const std::string& key) const {
    double value = 0;
    bool ok = v.IsScalar();
    try {
      if (ok) value = v.as<double>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
    if (!ok || !std::isfinite(value) || value <= 0)
      fail(v, key, "expected a positive, finite number (got " + (v.IsScalar() ? v.Scalar() : "...") + ")");
    return value;
  }

  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  const std::string& file_;
  std::string path_;
};

std::string kind_names() {
  std::string names;
  for (int i = 0; i < workloads::kKernelKinds; ++i)
    names += std::string(i ? ", " : "") + workloads::to_string(static_cast<KernelKind>(i));
  return names;
}

KernelKind read_kind(const Entry& e) {
  const std::string name = e.text("kind");
  KernelKind kind;
  if (!workloads::parse_kernel_kind(name, kind))
    e.fail(e.required("kind"), "kind", "unknown kind (got " + name + "; accepted: " + kind_names() + ")");
  return kind;
}

DType read_dtype(const Entry& e) {
  const std::string name = e.text("dtype");
  DType dtype;
  if (!workloads::parse_dtype(name, dtype))
    e.fail(e.required("dtype"), "dtype", "unknown dtype (got " + name + "; accepted: fp32, tf32, fp16, bf16, fp8)");
  return dtype;
}

KernelKey read_key(const Entry& e) {
  KernelKey key;
  key.kind = read_kind(e);
  key.dtype = read_dtype(e);
  if (is_gemm_kind(key.kind)) {
    e.check_keys({"kind", "dtype", "batch", "m", "n", "k", "us", "samples"}, kGemmFields);
    std::optional<YAML::Node> batch = e.find("batch");
    if (key.kind == KernelKind::AttentionGemm && !batch) e.required("batch");
    if (batch) key.batch = e.positive_integer(*batch, "batch");
    key.m = e.positive_integer(e.required("m"), "m");
    key.n = e.positive_integer(e.required("n"), "n");
    key.k = e.positive_integer(e.required("k"), "k");
  } else {
    e.check_keys({"kind", "dtype", "elements", "us", "samples"}, kOtherFields);
    key.elements = e.positive_integer(e.required("elements"), "elements");
  }
  return key;
}

MeasuredKernel read_kernel(const YAML::Node& node, const std::string& file, size_t index) {
  const std::string path = "kernels[" + std::to_string(index) + "]";
  if (!node.IsMap())
    throw InputError(workloads::where(file, node) + ": " + path +
                     ": expected a mapping {kind: ..., dtype: ..., ..., us: ...}");
  const Entry e(node, file, path);
  MeasuredKernel kernel;
  kernel.key = read_key(e);
  kernel.seconds = e.positive_number(e.required("us"), "us") * 1e-6;
  std::optional<YAML::Node> samples = e.find("samples");
  kernel.samples = samples ? static_cast<int>(e.positive_integer(*samples, "samples")) : 1;
  return kernel;
}

std::string known_gpus() {
  std::string names;
  for (const std::string& name : platforms::list_gpus()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

std::string read_gpu(const Entry& top) {
  const std::string gpu = top.text("gpu");
  const std::vector<std::string> known = platforms::list_gpus();
  if (gpu.empty() || std::find(known.begin(), known.end(), gpu) == known.end())
    top.fail(top.required("gpu"), "gpu", "unknown GPU type (got " + (gpu.empty() ? "nothing" : gpu) +
                                             "; accepted: " + known_gpus() + ")");
  return gpu;
}

}  // namespace

KernelTable KernelTable::load(const std::string& path) {
  const YAML::Node root = workloads::parse_yaml(workloads::read_text_file(path), path);
  if (!root.IsMap()) throw InputError(path + ": expected a calibration file (gpu:, source:, kernels:)");
  const Entry top(root, path, "");
  top.check_keys({"gpu", "source", "kernels"}, "gpu, source, kernels");
  KernelTable table;
  table.gpu_ = read_gpu(top);
  if (std::optional<YAML::Node> source = top.find("source"); source && !source->IsNull())
    table.source_ = top.text("source");
  const YAML::Node kernels = top.required("kernels");
  if (!kernels.IsSequence()) top.fail(kernels, "kernels", "expected a list of kernels");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const MeasuredKernel kernel = read_kernel(kernels[i], path, i);
    if (table.seconds(kernel.key))
      throw InputError(workloads::where(path, kernels[i]) + ": kernels[" + std::to_string(i) +
                       "]: duplicate kernel (" + workloads::to_string(kernel.key.kind) + ", " +
                       workloads::to_string(kernel.key.dtype) + ", " + kernel.key.shape() +
                       " is listed before)");
    table.kernels_.push_back(kernel);
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// Writing.

namespace {

std::string yaml_scalar(const std::string& text) {
  YAML::Emitter e;
  e << text;
  return e.c_str();
}

std::string flow_line(const MeasuredKernel& kernel) {
  const KernelKey& key = kernel.key;
  std::ostringstream s;
  s << "  - {kind: " << workloads::to_string(key.kind) << ", dtype: " << workloads::to_string(key.dtype);
  if (key.kind == KernelKind::AttentionGemm || (key.kind == KernelKind::Gemm && key.batch != 1))
    s << ", batch: " << key.batch;
  if (is_gemm_kind(key.kind))
    s << ", m: " << key.m << ", n: " << key.n << ", k: " << key.k;
  else
    s << ", elements: " << key.elements;
  char us[64];
  std::snprintf(us, sizeof us, "%.3f", kernel.seconds * 1e6);
  s << ", us: " << us << ", samples: " << kernel.samples << "}";
  return s.str();
}

}  // namespace

void KernelTable::save(const std::string& path) const {
  std::ostringstream text;
  text << "# Measured kernel times (docs/calibration.md): the mean of `samples` ops of each kind,\n"
          "# dtype and shape; `us` is one op's time on the GPU (the sum of its kernels).\n";
  text << "gpu: " << yaml_scalar(gpu_) << "\n";
  if (!source_.empty()) text << "source: " << yaml_scalar(source_) << "\n";
  text << "kernels:" << (kernels_.empty() ? " []" : "") << "\n";
  for (const MeasuredKernel& kernel : kernels_) text << flow_line(kernel) << "\n";
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write the calibration file");
  out << text.str();
  if (!out) throw InputError(path + ": cannot write the calibration file");
}

}  // namespace tessera::calibration
