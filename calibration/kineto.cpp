#include "calibration/kineto.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "platforms/platform_file.h"
#include "workloads/errors.h"

namespace tessera::calibration {

using json = nlohmann::json;
using workloads::DType;
using workloads::InputError;
using workloads::KernelKind;

namespace {

// ---------------------------------------------------------------------------------------------
// The trace as the importer sees it.

using Dims = std::vector<int64_t>;

struct CpuOp {
  std::string name;
  double ts = 0, end = 0;  // microseconds
  int parent = -1;         // the innermost op enclosing this one on its thread
  bool has_dims = false;   // `Input Dims` recorded
  std::vector<Dims> dims;  // one per input; empty for a scalar or a tensor list
  std::vector<std::string> types;  // `Input type`
};

struct Launch {
  std::string thread;
  double ts = 0, end = 0;
  std::optional<int64_t> external_id;
};

struct GpuActivity {
  std::string name, category;
  double dur_us = 0;
  std::optional<int64_t> correlation;
};

struct Trace {
  std::string device;
  std::vector<CpuOp> ops;
  std::unordered_map<int64_t, int> op_by_external_id;
  std::unordered_map<std::string, std::vector<int>> ops_by_thread;  // by start, outer first
  std::unordered_map<int64_t, Launch> launches;                     // by correlation
  std::vector<GpuActivity> activities;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::optional<double> number(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      return std::stod(it->get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

// An id: a whole number that an int64 holds. Anything else (1e65, "nan", 2.5) is no id, as
// text that is not a number is: the event is then not linked by it.
std::optional<int64_t> integer(const json& args, const char* key) {
  std::optional<double> v = number(args, key);
  constexpr double kBeyondInt64 = 9223372036854775808.0;  // 2^63
  if (!v || !(*v >= -kBeyondInt64 && *v < kBeyondInt64) || *v != std::floor(*v)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::string text(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Kineto's category, in today's spelling (PyTorch 1.8 wrote "Operator", "Runtime", "Kernel").
std::string category(const json& e) {
  const std::string cat = lower(text(e, "cat"));
  if (cat == "operator") return "cpu_op";
  if (cat == "runtime") return "cuda_runtime";
  if (cat == "driver") return "cuda_driver";
  if (cat == "memcpy") return "gpu_memcpy";
  if (cat == "memset") return "gpu_memset";
  return cat;
}

const json& args_of(const json& e) {
  static const json none = json::object();
  auto it = e.find("args");
  return it != e.end() && it->is_object() ? *it : none;
}

std::optional<int64_t> external_id(const json& args) {
  if (std::optional<int64_t> id = integer(args, "External id")) return id;
  return integer(args, "external id");
}

std::vector<Dims> input_dims(const json& list) {
  std::vector<Dims> dims;
  for (const json& input : list) {
    Dims d;
    bool flat = input.is_array();
    if (flat)
      for (const json& x : input) flat = flat && x.is_number_integer();
    if (flat)
      for (const json& x : input) d.push_back(x.get<int64_t>());
    dims.push_back(d);
  }
  return dims;
}

void add_op(Trace& t, const json& e, const std::string& thread, double ts, double dur) {
  CpuOp op;
  op.name = text(e, "name");
  op.ts = ts;
  op.end = ts + dur;
  const json& args = args_of(e);
  auto dims = args.find("Input Dims");
  if (dims != args.end() && dims->is_array()) {
    op.has_dims = true;
    op.dims = input_dims(*dims);
  }
  auto types = args.find("Input type");
  if (types != args.end() && types->is_array())
    for (const json& type : *types) op.types.push_back(type.is_string() ? type.get<std::string>() : "");
  const int index = static_cast<int>(t.ops.size());
  if (std::optional<int64_t> id = external_id(args)) t.op_by_external_id[*id] = index;
  t.ops_by_thread[thread].push_back(index);
  t.ops.push_back(std::move(op));
}

void add_event(Trace& t, const json& e) {
  if (!e.is_object() || text(e, "ph") != "X") return;
  const std::string cat = category(e);
  const std::optional<double> ts = number(e, "ts");
  const double dur = number(e, "dur").value_or(0);
  if (!ts) return;
  const json& args = args_of(e);
  const std::string thread = e.value("pid", json()).dump() + "/" + e.value("tid", json()).dump();
  if (cat == "cpu_op") {
    add_op(t, e, thread, *ts, dur);
  } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
    if (std::optional<int64_t> c = integer(args, "correlation"))
      t.launches[*c] = Launch{thread, *ts, *ts + dur, external_id(args)};
  } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
    t.activities.push_back(GpuActivity{text(e, "name"), cat, dur, integer(args, "correlation")});
  }
}

bool encloses(const CpuOp& op, double ts, double end) { return op.ts <= ts && end <= op.end; }

// Each op's parent: the innermost op on its thread whose span holds it.
void nest_ops(Trace& t) {
  for (auto& [thread, ids] : t.ops_by_thread) {
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
      const CpuOp &x = t.ops[a], &y = t.ops[b];
      return x.ts != y.ts ? x.ts < y.ts : x.end > y.end;
    });
    std::vector<int> open;
    for (int id : ids) {
      while (!open.empty() && !encloses(t.ops[open.back()], t.ops[id].ts, t.ops[id].end)) open.pop_back();
      t.ops[id].parent = open.empty() ? -1 : open.back();
      open.push_back(id);
    }
  }
}

std::string device_name(const json& doc) {
  auto props = doc.find("deviceProperties");
  if (props == doc.end() || !props->is_array() || props->empty() || !(*props)[0].is_object()) return "";
  return text((*props)[0], "name");
}

Trace read_trace(const std::string& path) {
  json doc;
  try {
    doc = json::parse(read_possibly_gzipped(path));
  } catch (const json::exception& e) {  // a syntax error, or a number JSON cannot hold (1e999)
    throw InputError(path + ": not a JSON trace (" + e.what() + ")");
  }
  auto events = doc.is_object() ? doc.find("traceEvents") : doc.end();
  if (!doc.is_object() || events == doc.end() || !events->is_array())
    throw InputError(path + ": no traceEvents: not a PyTorch profiler (Kineto) trace");
  Trace t;
  t.device = device_name(doc);
  for (const json& e : *events) add_event(t, e);
  nest_ops(t);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Linking a kernel to the op that launched it.

// The innermost op on the launch's thread whose span holds the launch, or -1.
int enclosing_op(const Trace& t, const Launch& launch) {
  auto found = t.ops_by_thread.find(launch.thread);
  if (found == t.ops_by_thread.end()) return -1;
  const std::vector<int>& ids = found->second;
  auto after = std::upper_bound(ids.begin(), ids.end(), launch.ts,
                                [&](double ts, int id) { return ts < t.ops[id].ts; });
  if (after == ids.begin()) return -1;
  int op = *(after - 1);
  while (op >= 0 && !encloses(t.ops[op], launch.ts, launch.end)) op = t.ops[op].parent;
  return op;
}

// The op that launched a kernel, or -1; counts how the link was made.
int launching_op(const Trace& t, const GpuActivity& kernel, TraceSummary& summary) {
  if (!kernel.correlation) return -1;
  auto launch = t.launches.find(*kernel.correlation);
  if (launch == t.launches.end()) return -1;
  const Launch& l = launch->second;
  if (l.external_id) {
    auto op = t.op_by_external_id.find(*l.external_id);
    if (op != t.op_by_external_id.end() && encloses(t.ops[op->second], l.ts, l.ts)) {
      ++summary.linked_by_external_id;
      return op->second;
    }
  }
  const int op = enclosing_op(t, l);
  if (op >= 0) ++summary.linked_by_nesting;
  return op;
}

// ---------------------------------------------------------------------------------------------
// What a kernel does, from its op's name (or its own), and its shape.

// Why an activity is not a compute kernel tessera calibrates, or "".
std::string not_a_compute_kernel(const GpuActivity& a) {
  const std::string name = lower(a.name);
  if (a.category == "gpu_memcpy" || contains(name, "memcpy")) return "memcpy";
  if (a.category == "gpu_memset" || contains(name, "memset")) return "memset";
  if (contains(name, "nccl")) return "NCCL";
  return "";
}

std::optional<KernelKind> gemm_kind_of_op(const std::string& name) {
  static const char* const kGemm[] = {"aten::mm", "aten::addmm", "aten::matmul", "aten::linear",
                                      "aten::_addmm_activation"};
  for (const char* g : kGemm)
    if (name == g) return KernelKind::Gemm;
  if (name == "aten::bmm" || name == "aten::baddbmm") return KernelKind::AttentionGemm;
  return std::nullopt;
}

// The kind a name says (an op's or a kernel's), if it says one.
std::optional<KernelKind> kind_of_name(const std::string& name) {
  if (std::optional<KernelKind> gemm = gemm_kind_of_op(name)) return gemm;
  const std::string n = lower(name);
  auto any = [&](std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const char* p) { return contains(n, p); });
  };
  if (any({"flash_attention", "flash_attn", "flash_fwd", "flash_bwd", "scaled_dot_product",
           "efficient_attention"}))
    return KernelKind::FlashAttention;
  if (any({"cross_entropy", "crossentropy", "log_softmax", "nll_loss"})) return KernelKind::CrossEntropy;
  if (any({"softmax"})) return KernelKind::Softmax;
  if (any({"layer_norm", "layernorm", "rms_norm", "rmsnorm"})) return KernelKind::Norm;
  if (any({"dropout"})) return KernelKind::Dropout;
  if (any({"gelu", "silu", "swiglu", "geglu"})) return KernelKind::Activation;
  if (any({"embedding", "index_select"})) return KernelKind::Embedding;
  if (any({"rotary"})) return KernelKind::Rotary;
  if (n == "aten::add" || n == "aten::add_" || (contains(n, "triton") && contains(n, "fused_add")))
    return KernelKind::Residual;
  return std::nullopt;
}

int64_t product(const Dims& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

std::optional<KernelKey> gemm_key(KernelKind kind, int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  KernelKey key;
  key.kind = kind;
  key.batch = batch;
  key.m = m;
  key.n = n;
  key.k = k;
  return key;
}

// [..., M, K] x [K, N] (a GEMM over the leading dims) or [B..., M, K] x [B..., K, N] (batched).
std::optional<KernelKey> matmul_key(const Dims& a, const Dims& b) {
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) return std::nullopt;
  if (b.size() == 2) return gemm_key(KernelKind::Gemm, 1, product(a, 0, a.size() - 1), b[1], a.back());
  if (a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin())) return std::nullopt;
  return gemm_key(KernelKind::AttentionGemm, product(a, 0, a.size() - 2), a[a.size() - 2], b.back(),
                  a.back());
}

// A GEMM op's shape from its inputs: mm [[M,K],[K,N]], addmm and baddbmm (the bias first),
// linear [[...,M,K],[N,K]], bmm [[B,M,K],[B,K,N]], matmul either way.
std::optional<KernelKey> gemm_shape(const std::string& op, const std::vector<Dims>& in) {
  const bool biased = op == "aten::addmm" || op == "aten::baddbmm" || op == "aten::_addmm_activation";
  const size_t first = biased ? 1 : 0;
  if (in.size() < first + 2) return std::nullopt;
  const Dims &a = in[first], &b = in[first + 1];
  if (op == "aten::linear") {
    if (a.size() < 2 || b.size() != 2 || b[1] != a.back()) return std::nullopt;
    return gemm_key(KernelKind::Gemm, 1, product(a, 0, a.size() - 1), b[0], a.back());
  }
  if (op == "aten::bmm" || op == "aten::baddbmm") {
    if (a.size() != 3 || b.size() != 3) return std::nullopt;
  } else if (op != "aten::matmul" && (a.size() != 2 || b.size() != 2)) {
    return std::nullopt;
  }
  return matmul_key(a, b);
}

// The elements of an op's main input: its first tensor with elements (1 for scalars only).
int64_t main_elements(const std::vector<Dims>& in) {
  for (const Dims& d : in)
    if (!d.empty() && product(d) > 0) return product(d);
  return 1;
}

// An embedding's elements are the rows it looks up times their width (its output).
int64_t embedding_elements(const std::string& op, const std::vector<Dims>& in) {
  if (op == "aten::embedding" && in.size() >= 2 && in[0].size() == 2 && !in[1].empty())
    return product(in[1]) * in[0][1];
  if (op == "aten::index_select" && in.size() >= 3 && !in[0].empty() && in[2].size() == 1)
    return in[2][0] * product(in[0], 1);
  return main_elements(in);
}

// aten::add of two tensors of one size is a residual; with a smaller (broadcast) tensor, a bias;
// with a scalar, plain elementwise work.
KernelKind add_kind(const std::vector<Dims>& in) {
  if (in.size() < 2 || in[0].empty() || in[1].empty()) return KernelKind::Elementwise;
  return product(in[1]) == product(in[0]) ? KernelKind::Residual : KernelKind::Bias;
}

std::optional<DType> dtype_of_type(const std::string& type) {
  if (type == "c10::Half") return DType::FP16;
  if (type == "c10::BFloat16") return DType::BF16;
  if (type == "float") return DType::FP32;
  if (type.rfind("c10::Float8", 0) == 0) return DType::FP8;
  return std::nullopt;
}

DType dtype_of(const CpuOp& op, const std::string& kernel_name) {
  for (const std::string& type : op.types)
    if (std::optional<DType> d = dtype_of_type(type)) return *d;
  const std::string n = lower(kernel_name);
  if (contains(n, "bf16") || contains(n, "bfloat16")) return DType::BF16;
  return DType::FP16;  // "f16", "half", or nothing said
}

// The key of an op of a kind, from its shapes; nullopt when its shapes do not fit the kind.
std::optional<KernelKey> key_of(KernelKind kind, const CpuOp& op, const std::string& kernel_name) {
  std::optional<KernelKey> key;
  if (is_gemm_kind(kind)) {
    key = gemm_shape(op.name, op.dims);
  } else {
    const bool add = op.name == "aten::add" || op.name == "aten::add_";
    key = KernelKey{};
    key->kind = kind == KernelKind::Residual && add ? add_kind(op.dims) : kind;
    key->elements = kind == KernelKind::Embedding ? embedding_elements(op.name, op.dims) : main_elements(op.dims);
  }
  if (key) key->dtype = dtype_of(op, kernel_name);
  return key;
}

struct Attribution {
  int op = -1;  // the sample: the op whose kernels are summed
  KernelKey key;
  std::string skipped;  // why the kernel is not imported, or ""
};

// The outermost op, from the launcher out, whose name says what it does and whose shapes fit;
// else the nearest op with shapes, of the kind the kernel's name says (else elementwise).
Attribution attribute(const Trace& t, int launcher, const std::string& kernel_name) {
  Attribution got;
  for (int i = launcher; i >= 0; i = t.ops[i].parent) {
    std::optional<KernelKind> kind = kind_of_name(t.ops[i].name);
    if (!kind || !t.ops[i].has_dims) continue;
    if (std::optional<KernelKey> key = key_of(*kind, t.ops[i], kernel_name)) got = {i, *key, ""};
  }
  if (got.op >= 0) return got;
  int shaped = launcher;
  while (shaped >= 0 && !t.ops[shaped].has_dims) shaped = t.ops[shaped].parent;
  if (shaped < 0) return {-1, {}, "no input shapes recorded"};
  std::optional<KernelKind> kind = kind_of_name(kernel_name);
  if (!kind || is_gemm_kind(*kind)) kind = KernelKind::Elementwise;
  return {shaped, *key_of(*kind, t.ops[shaped], kernel_name), ""};
}

// ---------------------------------------------------------------------------------------------
// Samples and the table.

struct Sample {
  KernelKey key;
  double us = 0;
};

void skip(TraceSummary& s, const std::string& reason) { ++s.skipped[reason]; }

// One sample per op: the sum of the kernels it launched.
std::map<int, Sample> samples_of(const Trace& t, TraceSummary& summary) {
  std::map<int, Sample> samples;
  for (const GpuActivity& kernel : t.activities) {
    ++summary.activities;
    if (const std::string why = not_a_compute_kernel(kernel); !why.empty()) {
      skip(summary, why);
      continue;
    }
    const int launcher = launching_op(t, kernel, summary);
    if (launcher < 0) {
      skip(summary, "not linked to a cpu op");
      ++summary.unlinked[kernel.name];
      continue;
    }
    const Attribution a = attribute(t, launcher, kernel.name);
    if (!a.skipped.empty()) {
      skip(summary, a.skipped);
      continue;
    }
    auto [it, added] = samples.emplace(a.op, Sample{a.key, 0});
    it->second.us += kernel.dur_us;
    ++summary.imported_kernels;
  }
  summary.ops = static_cast<int>(samples.size());
  return samples;
}

std::string known_gpus() {
  std::string names;
  for (const std::string& name : platforms::list_gpus()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

bool is_known_gpu(const std::string& name) {
  const std::vector<std::string> known = platforms::list_gpus();
  return std::find(known.begin(), known.end(), name) != known.end();
}

// The GPU type a trace's table is for (see import_kineto_traces).
std::string table_gpu(const std::string& path, const std::string& device, const std::string& chosen) {
  const std::string gpu = gpu_type_of_device(device);
  const std::string shown = device.empty() ? "no device name" : "'" + device + "'";
  if (!chosen.empty() && !gpu.empty() && gpu != chosen)
    throw InputError(path + ": deviceProperties[0].name: recorded on " + shown + " (" + gpu +
                     "), not on " + chosen);
  if (!chosen.empty()) return chosen;
  if (gpu.empty())
    throw InputError(path + ": deviceProperties[0].name: unknown GPU (got " + shown +
                     "; tessera knows: " + known_gpus() + ")");
  return gpu;
}

std::string source_of(const std::vector<std::string>& paths) {
  std::string source = "kineto:";
  for (const std::string& p : paths) source += " " + std::filesystem::path(p).filename().string();
  return source;
}

}  // namespace

std::string read_possibly_gzipped(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": cannot read (a directory)");
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (file == nullptr) throw InputError(path + ": cannot open file");
  std::string text;
  char buffer[1 << 16];
  int got = 0;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  int code = 0;
  const std::string error = got < 0 ? gzerror(file, &code) : "";
  gzclose(file);
  if (got < 0) throw InputError(path + ": cannot read (" + error + ")");
  return text;
}

std::string gpu_type_of_device(const std::string& device_name) {
  // CUDA's names for the GPU types tessera ships (the H100 SXM5 reports "H100 80GB HBM3").
  static const std::pair<const char*, const char*> kCudaNames[] = {
      {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
      {"NVIDIA H200", "H200-SXM-141GB"},
      {"NVIDIA B200", "B200"}};
  std::string name = device_name;
  for (const auto& [cuda, tessera] : kCudaNames)
    if (device_name == cuda) name = tessera;
  if (name.rfind("NVIDIA ", 0) == 0) name = name.substr(7);
  return !name.empty() && is_known_gpu(name) ? name : "";
}

KinetoImport import_kineto_traces(const std::vector<std::string>& paths, const std::string& gpu) {
  if (!gpu.empty() && !is_known_gpu(gpu))
    throw InputError("gpu: unknown GPU type (got " + gpu + "; accepted: " + known_gpus() + ")");
  KinetoImport got;
  std::map<KernelKey, std::pair<double, int>> sums;  // key -> total us, samples
  for (const std::string& path : paths) {
    const Trace trace = read_trace(path);
    TraceSummary summary;
    summary.path = path;
    summary.device = trace.device;
    summary.gpu = table_gpu(path, trace.device, gpu);
    if (!got.traces.empty() && summary.gpu != got.traces[0].gpu)
      throw InputError(path + ": recorded on " + summary.gpu + ", " + got.traces[0].path + " on " +
                       got.traces[0].gpu + ": one table is for one GPU type");
    for (const auto& [op, sample] : samples_of(trace, summary)) {
      sums[sample.key].first += sample.us;
      ++sums[sample.key].second;
    }
    got.traces.push_back(summary);
  }
  for (const auto& [key, sum] : sums) got.table.add({key, sum.first / sum.second * 1e-6, sum.second});
  got.table.set_gpu(got.traces.empty() ? gpu : got.traces[0].gpu);
  got.table.set_source(source_of(paths));
  return got;
}

KernelTable import_kineto(const std::vector<std::string>& paths) { return import_kineto_traces(paths).table; }

}  // namespace tessera::calibration
