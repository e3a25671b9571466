#include "sc_main/compute_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "calibration/compute_model.h"
#include "platforms/platform_file.h"
#include "sc_main/cli.h"
#include "sc_main/input_error.h"
#include "sc_main/platform_options.h"
#include "workloads/errors.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

using calibration::ComputeModel;
using calibration::GemmShapeFacts;
using workloads::DType;

constexpr int64_t kLargestDimension = int64_t(1) << 31;
constexpr double kLargestOutput = 4611686018427387904.0;  // 2^62 elements: tile counts fit int64

struct ComputeCommandSettings {
  std::string gpu, dtype = "fp16", measured;
  std::vector<std::string> gemms;
};

// One GEMM: batch independent products of an m x k by a k x n matrix.
struct GemmRequest {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }
};

// A row of the measured CSV for the GPU asked about.
struct MeasuredRow {
  int line = 0;
  std::string kind, dtype_name, unit, source;
  DType dtype = DType::FP16;
  GemmRequest shape;
  double value = 0;
};

po::options_description compute_command_options(ComputeCommandSettings& s) {
  po::options_description desc("tessera compute --gpu NAME [--gemm M,N,K[,BATCH] ...] [options]");
  desc.add_options()
      ("help,h", "this help")
      ("gpu", po::value(&s.gpu), "the GPU type (one with a file in calibration/data/compute)")
      ("gemm", po::value(&s.gemms)->composing(),
       "a GEMM shape M,N,K or M,N,K,BATCH (an M x K by K x N product, BATCH times); repeatable")
      ("dtype", po::value(&s.dtype)->default_value("fp16"), "the --gemm shapes' dtype: fp32, tf32, fp16, bf16, fp8")
      ("measured", po::value(&s.measured),
       "a CSV of measurements (gpu,kind,dtype,m,n,k,value,unit,source): its GEMMs, STREAM and "
       "flash-attention rows for the GPU against the model");
  return desc;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

models::GpuSpec load_gpu_option(const std::string& gpu) {
  if (gpu.empty()) throw InputError("--gpu: missing (a GPU type: " + joined(platforms::list_gpus()) + ")");
  const std::vector<std::string> known = platforms::list_gpus();
  if (std::find(known.begin(), known.end(), gpu) == known.end())
    throw InputError("--gpu " + gpu + ": unknown GPU type (known: " + joined(known) + ")");
  try {
    return platforms::load_gpu(gpu);
  } catch (const platforms::PlatformFileError& e) {
    throw InputError("--gpu " + gpu + ": " + e.what());
  }
}

// The GPU types with a compute-model file.
std::vector<std::string> modelled_gpus() {
  std::vector<std::string> names;
  for (const std::string& name : platforms::list_gpus())
    if (calibration::has_compute_parameters(name)) names.push_back(name);
  return names;
}

calibration::ComputeParameters load_compute_option(const std::string& gpu) {
  if (!calibration::has_compute_parameters(gpu))
    throw InputError("--gpu " + gpu + ": no compute model (" + calibration::compute_data_directory() +
                     " has files for " + joined(modelled_gpus()) + ")");
  try {
    return calibration::load_compute_parameters(gpu);
  } catch (const workloads::InputError& e) {
    throw InputError("--gpu " + gpu + ": " + e.what());
  }
}

DType parse_dtype_option(const std::string& text) {
  DType dtype;
  if (!workloads::parse_dtype(text, dtype))
    throw InputError("--dtype " + text + ": unknown dtype (fp32, tf32, fp16, bf16, fp8)");
  return dtype;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!text.empty() && text.back() == separator) fields.emplace_back();
  return fields;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// A positive integer of at most 2^31; nullopt-like 0 for anything else.
int64_t dimension(const std::string& text) {
  const std::string t = trimmed(text);
  if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) return 0;
  const int64_t v = std::stoll(t);
  return v <= kLargestDimension ? v : 0;
}

GemmRequest parse_gemm_option(const std::string& text) {
  const std::vector<std::string> fields = split(text, ',');
  const std::string problem = "--gemm " + text + ": ";
  if (fields.size() != 3 && fields.size() != 4)
    throw InputError(problem + "expected M,N,K or M,N,K,BATCH");
  int64_t v[4] = {0, 0, 0, 1};
  for (size_t i = 0; i < fields.size(); ++i)
    if ((v[i] = dimension(fields[i])) == 0)
      throw InputError(problem + "each of M,N,K,BATCH must be a positive integer of at most 2^31 (got '" +
                       trimmed(fields[i]) + "')");
  const GemmRequest r{v[3], v[0], v[1], v[2]};
  if (double(r.batch) * double(r.m) * double(r.n) > kLargestOutput)
    throw InputError(problem + "the output (BATCH x M x N) exceeds 2^62 elements");
  return r;
}

GemmShapeFacts estimate(const ComputeModel& model, DType dtype, const GemmRequest& r) {
  return model.gemm().time(r.batch, r.m, r.n, r.k, workloads::dtype_bytes(dtype), model.peak_flops(dtype));
}

double tflops(const GemmRequest& r, const GemmShapeFacts& facts) { return r.flops() / facts.total_s / 1e12; }

std::string shape_text(const GemmRequest& r) {
  std::string text = std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k);
  return r.batch > 1 ? std::to_string(r.batch) + " x " + text : text;
}

std::string one_decimal(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string tile_text(const GemmShapeFacts& f) { return std::to_string(f.tile_m) + "x" + std::to_string(f.tile_n); }

const char* bound(const GemmShapeFacts& f) { return f.compute_s >= f.memory_s ? "compute" : "memory"; }

std::string display_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path relative = std::filesystem::proximate(path, ec);
  const std::string text = relative.string();
  return ec || text.rfind("..", 0) == 0 ? path : text;
}

void print_title(std::ostream& out, const ComputeModel& model, const models::GpuSpec& gpu) {
  out << "# tessera compute: " << gpu.name << ", " << gpu.sm_count << " SMs; compute model "
      << display_path(model.parameters().file) << "\n";
}

const char* const kShapeRow = "%9s  %-28s %10s %9s %9s %6s %6s  %s\n";

void print_shape_header(std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, kShapeRow, "#   dtype", "shape ([batch x] m x n x k)", "time (us)", "TFLOP/s",
                "tile", "tiles", "waves", "bound");
  out << "#\n" << line;
}

void print_shape(std::ostream& out, const ComputeModel& model, DType dtype, const GemmRequest& r) {
  const GemmShapeFacts f = estimate(model, dtype, r);
  char line[256];
  std::snprintf(line, sizeof line, kShapeRow, workloads::to_string(dtype), shape_text(r).c_str(),
                one_decimal(f.total_s * 1e6).c_str(), one_decimal(tflops(r, f)).c_str(), tile_text(f).c_str(),
                std::to_string(f.tiles).c_str(), std::to_string(f.waves).c_str(), bound(f));
  out << line;
}

void check_peak(const ComputeModel& model, DType dtype, const std::string& option) {
  if (!(model.peak_flops(dtype) > 0))
    throw InputError(option + ": " + model.parameters().gpu + " has no " + workloads::to_string(dtype) +
                     " tensor peak");
}

// ---- the measured CSV ----

[[noreturn]] void csv_error(const std::string& path, int line, const std::string& problem) {
  throw InputError("--measured " + path + (line > 0 ? ":" + std::to_string(line) : "") + ": " + problem);
}

std::map<std::string, size_t> header_columns(const std::string& header, const std::string& path, int line) {
  std::map<std::string, size_t> columns;
  const std::vector<std::string> names = split(header, ',');
  for (size_t i = 0; i < names.size(); ++i) columns[trimmed(names[i])] = i;
  for (const char* needed : {"gpu", "kind", "dtype", "m", "n", "k", "value", "unit"})
    if (!columns.count(needed))
      csv_error(path, line, std::string("the header has no column '") + needed +
                                "' (gpu,kind,dtype,m,n,k,value,unit,source)");
  return columns;
}

// How many fields a row needs to reach every column but `source` (free text, may be empty).
size_t required_columns(const std::map<std::string, size_t>& columns) {
  size_t last = 0;
  for (const auto& [name, index] : columns)
    if (name != "source") last = std::max(last, index);
  return last + 1;
}

bool is_gemm_kind(const std::string& kind) { return kind == "gemm" || kind == "gemm_best"; }
bool is_stream_kind(const std::string& kind) { return kind.rfind("hbm_stream", 0) == 0; }
bool is_flash_kind(const std::string& kind) { return kind.rfind("flash_attention", 0) == 0; }

void read_measured_value(MeasuredRow& row, const std::string& text, const std::string& path) {
  std::size_t used = 0;
  try {
    row.value = std::stod(trimmed(text), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != trimmed(text).size() || !(row.value > 0) || !std::isfinite(row.value))
    csv_error(path, row.line, "value: expected a positive number (got '" + trimmed(text) + "')");
}

void read_gemm_fields(MeasuredRow& row, const std::vector<std::string>& f,
                      const std::map<std::string, size_t>& c, const std::string& path) {
  if (!workloads::parse_dtype(row.dtype_name, row.dtype))
    csv_error(path, row.line, "dtype: unknown dtype '" + row.dtype_name + "'");
  int64_t* dims[3] = {&row.shape.m, &row.shape.n, &row.shape.k};
  const char* names[3] = {"m", "n", "k"};
  for (int i = 0; i < 3; ++i)
    if ((*dims[i] = dimension(f[c.at(names[i])])) == 0)
      csv_error(path, row.line, std::string(names[i]) + ": expected a positive integer of at most 2^31 (got '" +
                                    trimmed(f[c.at(names[i])]) + "')");
  if (row.unit != "TFLOP/s")
    csv_error(path, row.line, "unit: GEMM rows are in TFLOP/s (got '" + row.unit + "')");
}

double bandwidth_bytes_per_s(const MeasuredRow& row, const std::string& path) {
  if (row.unit == "TB/s") return row.value * 1e12;
  if (row.unit == "GB/s") return row.value * 1e9;
  csv_error(path, row.line, "unit: STREAM rows are in TB/s or GB/s (got '" + row.unit + "')");
}

MeasuredRow read_measured_row(const std::vector<std::string>& f, const std::map<std::string, size_t>& c,
                              const std::string& path, int line) {
  MeasuredRow row;
  row.line = line;
  row.kind = trimmed(f[c.at("kind")]);
  row.dtype_name = trimmed(f[c.at("dtype")]);
  row.unit = trimmed(f[c.at("unit")]);
  if (c.count("source") && c.at("source") < f.size()) row.source = trimmed(f[c.at("source")]);
  read_measured_value(row, f[c.at("value")], path);
  if (is_gemm_kind(row.kind)) read_gemm_fields(row, f, c, path);
  if (is_stream_kind(row.kind)) bandwidth_bytes_per_s(row, path);
  if (is_flash_kind(row.kind) && !workloads::parse_dtype(row.dtype_name, row.dtype))
    csv_error(path, line, "dtype: unknown dtype '" + row.dtype_name + "'");
  if (is_flash_kind(row.kind) && row.unit != "TFLOP/s")
    csv_error(path, line, "unit: flash-attention rows are in TFLOP/s (got '" + row.unit + "')");
  return row;
}

// The rows of `gpu` (GEMMs, STREAM and flash attention; other kinds are left out).
std::vector<MeasuredRow> read_measured(const std::string& path, const std::string& gpu) {
  if (const std::string problem = limits::input_file_problem(path); !problem.empty()) csv_error(path, 0, problem);
  std::ifstream in(path);
  std::vector<MeasuredRow> rows;
  std::map<std::string, size_t> columns;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (trimmed(text).empty() || trimmed(text)[0] == '#') continue;
    if (columns.empty()) {
      columns = header_columns(text, path, line);
      continue;
    }
    const std::vector<std::string> fields = split(text, ',');
    if (fields.size() < required_columns(columns))
      csv_error(path, line, "expected " + std::to_string(columns.size()) + " columns, got " +
                                std::to_string(fields.size()));
    const std::string kind = trimmed(fields[columns.at("kind")]);
    if (trimmed(fields[columns.at("gpu")]) != gpu) continue;
    if (is_gemm_kind(kind) || is_stream_kind(kind) || is_flash_kind(kind))
      rows.push_back(read_measured_row(fields, columns, path, line));
  }
  if (columns.empty()) csv_error(path, 0, "no header line (gpu,kind,dtype,m,n,k,value,unit,source)");
  return rows;
}

double signed_error(double model, double measured) { return (model - measured) / measured; }

std::string percent(double fraction) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
  return text;
}

const char* const kMeasuredRow = "%-14s %-5s  %-20s %9s %9s %8s %9s %6s  %-7s  %s\n";

// Every GEMM row with the model's rate; returns the largest absolute error and its row.
std::pair<double, const MeasuredRow*> print_measured_gemms(std::ostream& out, const ComputeModel& model,
                                                           const std::vector<MeasuredRow>& rows) {
  char line[320];
  std::snprintf(line, sizeof line, kMeasuredRow, "#   kind", "dtype", "m x n x k", "measured", "model", "error", "tile",
                "waves", "bound", "source");
  out << "#\n# measured GEMMs\n" << line;
  std::snprintf(line, sizeof line, "%-14s %-5s  %-20s %9s %9s\n", "#", "", "", "(TFLOP/s)", "(TFLOP/s)");
  out << line;
  std::pair<double, const MeasuredRow*> worst{0, nullptr};
  for (const MeasuredRow& row : rows) {
    if (!is_gemm_kind(row.kind)) continue;
    const GemmShapeFacts f = estimate(model, row.dtype, row.shape);
    const double modelled = tflops(row.shape, f), error = signed_error(modelled, row.value);
    if (worst.second == nullptr || std::abs(error) > worst.first) worst = {std::abs(error), &row};
    std::snprintf(line, sizeof line, kMeasuredRow, ("    " + row.kind).c_str(), row.dtype_name.c_str(),
                  shape_text(row.shape).c_str(), one_decimal(row.value).c_str(), one_decimal(modelled).c_str(),
                  percent(error).c_str(), tile_text(f).c_str(), std::to_string(f.waves).c_str(), bound(f),
                  row.source.c_str());
    out << line;
  }
  return worst;
}

void print_largest_error(std::ostream& out, const std::pair<double, const MeasuredRow*>& worst) {
  if (worst.second == nullptr) {
    out << "# no GEMM rows for this GPU\n";
    return;
  }
  char line[200];
  std::snprintf(line, sizeof line, "# largest |error|: %.1f%% (%s %s %s)\n", 100 * worst.first,
                worst.second->kind.c_str(), worst.second->dtype_name.c_str(), shape_text(worst.second->shape).c_str());
  out << line;
}

void print_measured_stream(std::ostream& out, const ComputeModel& model, const MeasuredRow& row,
                           const std::string& path) {
  const double measured = bandwidth_bytes_per_s(row, path), modelled = model.parameters().memory.stream_bandwidth;
  char line[240];
  std::snprintf(line, sizeof line, "# %s: measured %.2f TB/s, compute model (memory.stream_gbps) %.2f TB/s, %+.1f%%\n",
                row.kind.c_str(), measured / 1e12, modelled / 1e12, 100 * signed_error(modelled, measured));
  out << line;
}

void print_measured_flash(std::ostream& out, const ComputeModel& model, const MeasuredRow& row) {
  const double file_rate = model.parameters().flash_attention_flops[static_cast<size_t>(row.dtype)];
  const double modelled = file_rate > 0 ? file_rate
                                        : model.peak_flops(row.dtype) * model.parameters().gemm.mainloop_efficiency;
  const std::string origin = file_rate > 0 ? "flash_attention_tflops." + row.dtype_name
                                           : "no flash_attention_tflops." + row.dtype_name + ": the main-loop rate";
  char line[320];
  std::snprintf(line, sizeof line, "# %s %s: measured %.1f TFLOP/s, compute model (%s) %.1f TFLOP/s, %+.1f%%\n",
                row.kind.c_str(), row.dtype_name.c_str(), row.value, origin.c_str(), modelled / 1e12,
                100 * signed_error(modelled / 1e12, row.value));
  out << line;
}

// The measured rows of the model's GPU, each GEMM of a dtype the GPU has a peak for.
std::vector<MeasuredRow> read_measured_for(const ComputeModel& model, const std::string& path) {
  std::vector<MeasuredRow> rows = read_measured(path, model.parameters().gpu);
  for (const MeasuredRow& row : rows)
    if (is_gemm_kind(row.kind)) check_peak(model, row.dtype, "--measured " + path + ":" + std::to_string(row.line));
  return rows;
}

void print_measured(std::ostream& out, const ComputeModel& model, const std::string& path,
                    const std::vector<MeasuredRow>& rows) {
  out << "#\n# measured: " << path << "\n";
  print_largest_error(out, print_measured_gemms(out, model, rows));
  for (const MeasuredRow& row : rows) {
    if (is_stream_kind(row.kind)) print_measured_stream(out, model, row, path);
    if (is_flash_kind(row.kind)) print_measured_flash(out, model, row);
  }
}

}  // namespace

int command_compute(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  ComputeCommandSettings s;
  po::variables_map vm;
  if (!parse_command_options(args, compute_command_options(s), out, vm)) return kOk;
  const models::GpuSpec gpu = load_gpu_option(s.gpu);
  const calibration::ComputeParameters parameters = load_compute_option(s.gpu);
  const DType dtype = parse_dtype_option(s.dtype);
  std::vector<GemmRequest> shapes;
  for (const std::string& text : s.gemms) shapes.push_back(parse_gemm_option(text));
  if (shapes.empty() && s.measured.empty())
    throw InputError("--gemm: missing (a shape M,N,K[,BATCH], or --measured FILE.csv)");
  const ComputeModel model(gpu, parameters, 0.0);
  if (!shapes.empty()) check_peak(model, dtype, "--dtype " + s.dtype);
  const std::vector<MeasuredRow> measured = s.measured.empty() ? std::vector<MeasuredRow>{}
                                                               : read_measured_for(model, s.measured);
  print_title(out, model, gpu);
  if (!shapes.empty()) print_shape_header(out);
  for (const GemmRequest& r : shapes) print_shape(out, model, dtype, r);
  if (!s.measured.empty()) print_measured(out, model, s.measured, measured);
  return kOk;
}

}  // namespace tessera::app
