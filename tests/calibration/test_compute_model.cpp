// The compute model (docs/compute-model.md): the shipped files against every measured GEMM, the
// GEMM model's closed forms on hand-made parameters, memory-bound kernels, host launch time,
// measured kernel tables, strict reading of compute-model files, and `tessera compute`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "command_outcome.h"
#include "calibration/compute_model.h"
#include "calibration/gemm_model.h"
#include "calibration/kineto.h"
#include "calibration/kernel_table.h"
#include "platforms/platform_file.h"
#include "sc_main/compute_command.h"
#include "sc_main/input_error.h"
#include "trace_builder.h"
#include "workloads/errors.h"

using namespace tessera;
using namespace tessera::calibration;
using tessera::calibration::testing::write_text;
using workloads::DType;
using workloads::KernelKind;

namespace {

const std::string kMeasured = std::string(TESSERA_VALIDATION_DATA) + "/gemm_and_memory.csv";

// ---- the measured GEMMs ----

struct MeasuredGemm {
  std::string gpu, kind, dtype;
  int64_t m = 0, n = 0, k = 0;
  double tflops = 0;
  std::string describe() const {
    return gpu + " " + kind + " " + dtype + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + " (measured " + std::to_string(tflops) + " TFLOP/s)";
  }
};

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// The gemm and gemm_best rows (gpu,kind,dtype,m,n,k,value,unit,source).
std::vector<MeasuredGemm> measured_gemms(const std::string& path = kMeasured) {
  std::ifstream in(path);
  std::vector<MeasuredGemm> rows;
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields_of(line);
    if (f.size() < 8 || (f[1] != "gemm" && f[1] != "gemm_best")) continue;
    rows.push_back({f[0], f[1], f[2], std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5]), std::stod(f[6])});
  }
  return rows;
}

ComputeModel shipped_model(const std::string& gpu, double host_launch_s = 0,
                           std::shared_ptr<const KernelTable> table = nullptr) {
  return ComputeModel(platforms::load_gpu(gpu), load_compute_parameters(gpu), host_launch_s, std::move(table));
}

double model_tflops(const ComputeModel& model, DType dtype, int64_t m, int64_t n, int64_t k) {
  const double s = model.gemm().seconds(1, m, n, k, workloads::dtype_bytes(dtype), model.peak_flops(dtype));
  return 2.0 * m * n * k / s / 1e12;
}

TEST(ComputeModelMeasured, EveryGemmWithinTenPercentOfItsMeasurement) {
  const std::vector<MeasuredGemm> rows = measured_gemms();
  int a100 = 0, h100 = 0;
  for (const MeasuredGemm& row : rows) {
    a100 += row.gpu == "A100-SXM4-80GB";
    h100 += row.gpu == "H100-SXM5-80GB";
    DType dtype;
    ASSERT_TRUE(workloads::parse_dtype(row.dtype, dtype)) << row.describe();
    const double modelled = model_tflops(shipped_model(row.gpu), dtype, row.m, row.n, row.k);
    EXPECT_LE(std::abs(modelled - row.tflops) / row.tflops, 0.10)
        << row.describe() << ": model " << modelled << " TFLOP/s";
  }
  EXPECT_GT(a100, 0);
  EXPECT_GT(h100, 0);
}

// The Hopper files were fitted to the GEMMs measured on an H100 and an H200
// (calibration/data/measured/<GPU>/measured.csv, tools/measure_gpu.py): on the aligned bf16 and
// fp16 shapes, the model is within 5% on average and 25% on every one.
TEST(ComputeModelMeasured, HopperGemmsAgainstTheirDeviceMeasurements) {
  for (const std::string gpu : {"H100-SXM5-80GB", "H200-SXM-141GB"}) {
    const std::vector<MeasuredGemm> rows =
        measured_gemms(std::string(TESSERA_MEASURED_GPUS) + "/" + gpu + "/measured.csv");
    const ComputeModel model = shipped_model(gpu);
    double sum = 0;
    int count = 0;
    for (const MeasuredGemm& row : rows) {
      DType dtype;
      ASSERT_TRUE(workloads::parse_dtype(row.dtype, dtype)) << row.describe();
      const double eb = workloads::dtype_bytes(dtype);
      if (!GemmModel::rows_aligned(row.n, row.k, eb) || (dtype != DType::BF16 && dtype != DType::FP16)) continue;
      const double error = std::abs(model_tflops(model, dtype, row.m, row.n, row.k) - row.tflops) / row.tflops;
      EXPECT_LE(error, 0.25) << row.describe();
      sum += error;
      ++count;
    }
    EXPECT_GE(count, 90) << gpu;
    EXPECT_LE(sum / count, 0.05) << gpu;
  }
}

// Not fitted to: the GEMMs of a GPT layer's forward and backward profiled on an H100
// (tests/calibration/data/gpt_layer_h100). They ran 2-11% faster there than the model, which was
// fitted to 30 back-to-back calls of each shape (a GPU under sustained GEMM load clocks lower).
TEST(ComputeModelMeasured, H100ModelAgainstTheGemmsOfAProfiledLayer) {
  const KinetoImport got =
      import_kineto_traces({std::string(TESSERA_CALIBRATION_DATA) + "/gpt_layer_h100/layer.json.gz"});
  const ComputeModel model = shipped_model("H100-SXM5-80GB");
  int gemms = 0;
  for (const MeasuredKernel& k : got.table.kernels()) {
    if (k.key.kind != KernelKind::Gemm) continue;
    const double modelled = model.gemm().seconds(k.key.batch, k.key.m, k.key.n, k.key.k,
                                                 workloads::dtype_bytes(k.key.dtype), model.peak_flops(k.key.dtype));
    EXPECT_LE(std::abs(modelled - k.seconds) / k.seconds, 0.12) << k.key.shape();
    ++gemms;
  }
  EXPECT_EQ(gemms, 9);
}

// ---- the GEMM model's closed forms ----

constexpr double kElementBytes = 2;  // fp16
constexpr int kTile = 128;

// One 128 x 128 tile, the SM at 1 TFLOP/s, no L2 limit, no per-tile or launch cost, unlimited
// HBM: a GEMM's time is waves x 2 * 128 * 128 * k / 1e12.
GemmParameters compute_only() {
  GemmParameters p;
  p.tiles = {{kTile, kTile}};
  p.mainloop_efficiency = 1;
  p.l2_bandwidth = 0;
  p.tile_overhead_s = 0;
  p.overlap_exponent = 2;
  p.unaligned_efficiency = 1;
  p.launch_s = 0;
  return p;
}

constexpr int kSms = 4;
constexpr double kPeak = kSms * 1e12;
constexpr double kUnlimitedHbm = 1e30;

double tile_seconds(int64_t k) { return 2.0 * kTile * kTile * double(k) / 1e12; }

TEST(GemmModelClosedForms, OneTilePerSmIsOneWave) {
  const GemmModel model(compute_only(), kSms, kUnlimitedHbm);
  const GemmShapeFacts f = model.time(1, 2 * kTile, 2 * kTile, 1024, kElementBytes, kPeak);
  EXPECT_EQ(f.tiles, kSms);
  EXPECT_EQ(f.waves, 1);
  EXPECT_DOUBLE_EQ(f.total_s, tile_seconds(1024));
}

TEST(GemmModelClosedForms, OneTileMoreThanSmsIsTwoWaves) {
  const GemmModel model(compute_only(), kSms, kUnlimitedHbm);
  const GemmShapeFacts full = model.time(1, kSms * kTile, kTile, 1024, kElementBytes, kPeak);
  const GemmShapeFacts over = model.time(1, (kSms + 1) * kTile, kTile, 1024, kElementBytes, kPeak);
  EXPECT_EQ(full.waves, 1);
  EXPECT_EQ(over.tiles, kSms + 1);
  EXPECT_EQ(over.waves, 2);
  EXPECT_DOUBLE_EQ(over.total_s, 2 * full.total_s);  // 25% more work, twice the time
}

TEST(GemmModelClosedForms, OneElementPastATileMultiplePaysAWholeTileRow) {
  const GemmModel model(compute_only(), 1, kUnlimitedHbm);  // one SM: time is proportional to tiles
  const int64_t n = 2 * kTile, k = 512;
  const GemmShapeFacts exact = model.time(1, 2 * kTile, n, k, kElementBytes, 1e12);
  const GemmShapeFacts past = model.time(1, 2 * kTile + 1, n, k, kElementBytes, 1e12);
  const GemmShapeFacts next = model.time(1, 3 * kTile, n, k, kElementBytes, 1e12);
  EXPECT_EQ(past.tiles, exact.tiles + 2);  // a whole row of n / 128 tiles for one more row of m
  EXPECT_DOUBLE_EQ(past.total_s, next.total_s);
  EXPECT_DOUBLE_EQ(past.total_s, 1.5 * exact.total_s);
}

TEST(GemmModelClosedForms, SkinnyShapeIsMemoryBound) {
  GemmParameters p = compute_only();
  p.tiles = {{128, 128}, {64, 64}};
  const double hbm = 1.5e12, peak = 300e12;
  const GemmModel model(p, 100, hbm);
  const int64_t m = int64_t(1) << 22, n = 64, k = 64;
  const GemmShapeFacts f = model.time(1, m, n, k, kElementBytes, peak);
  const double bytes = (double(m) * k + double(k) * n + double(m) * n) * kElementBytes;
  EXPECT_GT(f.memory_s, f.compute_s);
  EXPECT_NEAR(f.total_s, bytes / hbm, 0.10 * bytes / hbm);
}

TEST(GemmModelClosedForms, UnalignedOperandsRunTheMainLoopAtTheUnalignedFactor) {
  GemmParameters slow = compute_only();
  slow.unaligned_efficiency = 0.5;
  const GemmModel aligned_only(compute_only(), kSms, kUnlimitedHbm);
  const GemmModel model(slow, kSms, kUnlimitedHbm);
  // k odd: k x 2 bytes is not a multiple of 16.
  const double odd = model.seconds(1, 512, 512, 1023, kElementBytes, kPeak);
  EXPECT_DOUBLE_EQ(odd, aligned_only.seconds(1, 512, 512, 1023, kElementBytes, kPeak) / 0.5);
  EXPECT_DOUBLE_EQ(model.seconds(1, 512, 512, 1024, kElementBytes, kPeak),
                   aligned_only.seconds(1, 512, 512, 1024, kElementBytes, kPeak));
  // n odd: C's rows are unaligned too.
  EXPECT_DOUBLE_EQ(model.seconds(1, 512, 511, 1024, kElementBytes, kPeak),
                   aligned_only.seconds(1, 512, 511, 1024, kElementBytes, kPeak) / 0.5);
  // m odd: only the number of rows; every row still starts aligned.
  EXPECT_DOUBLE_EQ(model.seconds(1, 511, 512, 1024, kElementBytes, kPeak),
                   aligned_only.seconds(1, 511, 512, 1024, kElementBytes, kPeak));
}

// ---- ComputeModel ----

models::GpuSpec test_gpu() {
  models::GpuSpec gpu;
  gpu.name = "A100-SXM4-80GB";
  gpu.sm_count = 100;
  gpu.peak_tflops = {20, 150, 300, 300, 300};
  return gpu;
}

ComputeParameters test_parameters() {
  ComputeParameters p;
  p.gpu = "A100-SXM4-80GB";
  p.gemm = compute_only();
  p.memory.stream_bandwidth = 1e12;
  p.memory.launch_s = 2e-6;
  p.memory.efficiency.fill(1.0);
  p.memory.efficiency[static_cast<size_t>(KernelKind::Norm)] = 0.5;
  return p;
}

protocol::ComputeEvent memory_kernel(KernelKind kind, double bytes, int kernels) {
  protocol::ComputeEvent e;
  e.kind = static_cast<uint8_t>(kind);
  e.dtype = static_cast<uint8_t>(DType::FP16);
  e.bytes = bytes;
  e.elements = int64_t(bytes / 2);
  e.kernels = static_cast<uint16_t>(kernels);
  return e;
}

protocol::ComputeEvent gemm_kernel(int64_t m, int64_t n, int64_t k) {
  protocol::ComputeEvent e;
  e.kind = static_cast<uint8_t>(KernelKind::Gemm);
  e.dtype = static_cast<uint8_t>(DType::FP16);
  e.gemm_m = m;
  e.gemm_n = n;
  e.gemm_k = k;
  e.flops = 2.0 * m * n * k;
  e.bytes = 2.0 * (m * k + k * n + m * n);
  return e;
}

TEST(ComputeModelKernels, MemoryBoundKernelMovesItsBytesAtStreamTimesItsKindsEfficiency) {
  const ComputeModel model(test_gpu(), test_parameters(), 0);
  const double bytes = 1e9;
  EXPECT_DOUBLE_EQ(model.device_seconds(memory_kernel(KernelKind::Norm, bytes, 3)),
                   bytes / (1e12 * 0.5) + 3 * 2e-6);
  EXPECT_DOUBLE_EQ(model.device_seconds(memory_kernel(KernelKind::Residual, bytes, 1)), bytes / 1e12 + 2e-6);
}

TEST(ComputeModelKernels, ShortOpOfManyKernelsWaitsForTheHostLaunches) {
  const double host_launch_s = 10e-6;
  const ComputeModel model(test_gpu(), test_parameters(), host_launch_s);
  const int kernels = 5;
  const models::KernelTime t = model.kernel_time(memory_kernel(KernelKind::Elementwise, 1e3, kernels));
  ASSERT_LT(t.device_s, kernels * host_launch_s);
  EXPECT_DOUBLE_EQ(t.host_s, kernels * host_launch_s - t.device_s);
  EXPECT_DOUBLE_EQ(t.total(), kernels * host_launch_s);
  // A long op hides its launches: no host time.
  EXPECT_EQ(model.kernel_time(memory_kernel(KernelKind::Elementwise, 1e9, kernels)).host_s, 0);
}

KernelKey gemm_key(int64_t m, int64_t n, int64_t k) {
  KernelKey key;
  key.kind = KernelKind::Gemm;
  key.dtype = DType::FP16;
  key.m = m;
  key.n = n;
  key.k = k;
  return key;
}

TEST(ComputeModelKernels, MeasuredKernelOverridesTheModelForItsKeyOnly) {
  auto table = std::make_shared<KernelTable>();
  table->set_gpu("A100-SXM4-80GB");
  table->add({gemm_key(8192, 1536, 4096), 400e-6, 40});
  const ComputeModel measured = shipped_model("A100-SXM4-80GB", 0, table);
  const ComputeModel modelled = shipped_model("A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(measured.device_seconds(gemm_kernel(8192, 1536, 4096)), 400e-6);
  EXPECT_NE(modelled.device_seconds(gemm_kernel(8192, 1536, 4096)), 400e-6);
  EXPECT_DOUBLE_EQ(measured.device_seconds(gemm_kernel(8192, 1536, 2048)),
                   modelled.device_seconds(gemm_kernel(8192, 1536, 2048)));
}

TEST(ComputeModelKernels, TableOfAnotherGpuIsAnInputError) {
  auto table = std::make_shared<KernelTable>();
  table->set_gpu("H100-SXM5-80GB");
  table->add({gemm_key(8192, 1536, 4096), 400e-6, 40});
  try {
    shipped_model("A100-SXM4-80GB", 0, table);
    FAIL() << "a table of another GPU was accepted";
  } catch (const workloads::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("H100-SXM5-80GB"), std::string::npos) << e.what();
  }
}

// ---- reading compute-model files ----

// A valid file; each test breaks one line (line numbers are 1-based).
std::vector<std::string> valid_file_lines() {
  return {"gpu: A100-SXM4-80GB",
          "gemm:",
          "  tiles: [[256, 128], [128, 128]]",
          "  l2_bandwidth_gbps: 7219",
          "  mainloop_efficiency: 0.85",
          "  tile_overhead_us: 2.0",
          "  overlap_exponent: 2",
          "  unaligned_efficiency: 0.75",
          "  launch_us: 2.0",
          "memory:",
          "  stream_gbps: 1700",
          "  launch_us: 2.0",
          "  efficiency: {norm: 0.58, softmax: 0.37}",
          "flash_attention_tflops: {fp16: 179.5}"};
}

std::string file_with(const std::string& name, std::vector<std::string> lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return write_text(name, text);
}

std::string load_error(const std::string& path) {
  try {
    load_compute_parameters(path);
  } catch (const workloads::InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(ComputeModelFile, ValidFileLoads) {
  const ComputeParameters p = load_compute_parameters(file_with("valid.yaml", valid_file_lines()));
  EXPECT_EQ(p.gemm.tiles.size(), 2u);
  EXPECT_DOUBLE_EQ(p.memory.stream_bandwidth, 1700e9);
  EXPECT_DOUBLE_EQ(p.memory.efficiency[static_cast<size_t>(KernelKind::Softmax)], 0.37);
  EXPECT_DOUBLE_EQ(p.flash_attention_flops[static_cast<size_t>(DType::FP16)], 179.5e12);
}

TEST(ComputeModelFile, MissingGemmSectionNamesFileLineAndKey) {
  std::vector<std::string> lines = valid_file_lines();
  lines.erase(lines.begin() + 1, lines.begin() + 9);
  const std::string path = file_with("no_gemm.yaml", lines);
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":1: key 'gemm': is required"), std::string::npos) << error;
}

TEST(ComputeModelFile, EfficiencyAboveOneNamesFileLineAndKey) {
  std::vector<std::string> lines = valid_file_lines();
  lines[4] = "  mainloop_efficiency: 1.2";
  const std::string path = file_with("efficiency.yaml", lines);
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":5: key 'mainloop_efficiency'"), std::string::npos) << error;
}

TEST(ComputeModelFile, MemoryEfficiencyOutOfRangeNamesFileLineAndKey) {
  std::vector<std::string> lines = valid_file_lines();
  lines[12] = "  efficiency: {norm: 1.5}";
  const std::string path = file_with("memory_efficiency.yaml", lines);
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":13: key 'norm'"), std::string::npos) << error;
}

TEST(ComputeModelFile, BadTileListNamesFileLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  tiles: [[256, 128], [4, 128]]", "key 'tiles': rows and columns in [8, 1024]"},
      {"  tiles: [256, 128]", "key 'tiles': each tile is [rows, columns]"},
      {"  tiles: []", "key 'tiles': must be a list"},
  };
  for (const auto& [tiles, expected] : cases) {
    std::vector<std::string> lines = valid_file_lines();
    lines[2] = tiles;
    const std::string path = file_with("tiles.yaml", lines);
    const std::string error = load_error(path);
    EXPECT_NE(error.find(path + ":3: " + expected), std::string::npos) << tiles << "\n got: " << error;
  }
}

TEST(ComputeModelFile, UnknownKeyNamesFileLineAndKey) {
  std::vector<std::string> lines = valid_file_lines();
  lines.insert(lines.begin() + 6, "  colour: red");
  const std::string path = file_with("unknown.yaml", lines);
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":7: unknown key 'colour' in gemm"), std::string::npos) << error;
}

// ---- tessera compute ----

using command_testing::Outcome;

Outcome compute(const std::vector<std::string>& args) {
  return command_testing::run_command(app::command_compute, args);
}

std::string one_decimal(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

TEST(ComputeCommand, PrintsTheModelsTimeAndTileForAShape) {
  const Outcome r = compute({"--gpu", "A100-SXM4-80GB", "--gemm", "4096,4096,4096"});
  ASSERT_EQ(r.status, 0) << r.error;
  std::cout << r.out;
  const ComputeModel model = shipped_model("A100-SXM4-80GB");
  const GemmShapeFacts f = model.gemm().time(1, 4096, 4096, 4096, 2, model.peak_flops(DType::FP16));
  EXPECT_NE(r.out.find(one_decimal(2.0 * 4096 * 4096 * 4096 / f.total_s / 1e12)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(one_decimal(f.total_s * 1e6)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(f.tile_m) + "x" + std::to_string(f.tile_n)), std::string::npos);
  EXPECT_NE(r.out.find("compute"), std::string::npos);
}

TEST(ComputeCommand, MeasuredPrintsEveryGemmRowOfTheGpu) {
  for (const std::string gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"}) {
    const Outcome r = compute({"--gpu", gpu, "--measured", kMeasured});
    ASSERT_EQ(r.status, 0) << r.error;
    std::cout << r.out;
    for (const MeasuredGemm& row : measured_gemms()) {
      if (row.gpu != gpu) continue;
      const std::string shape = std::to_string(row.m) + "x" + std::to_string(row.n) + "x" + std::to_string(row.k);
      const std::string::size_type at = r.out.find(" " + shape + " ");
      ASSERT_NE(at, std::string::npos) << row.describe();
      const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
      EXPECT_NE(line.find(one_decimal(row.tflops)), std::string::npos) << line;
    }
    EXPECT_NE(r.out.find("# largest |error|: "), std::string::npos);
    EXPECT_NE(r.out.find("hbm_stream_triad: measured "), std::string::npos);
  }
  const Outcome a100 = compute({"--gpu", "A100-SXM4-80GB", "--measured", kMeasured});
  EXPECT_NE(a100.out.find("flash_attention2_hdim64 fp16: measured 179.5 TFLOP/s"), std::string::npos);
}

TEST(ComputeCommand, Help) {
  const Outcome r = compute({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* option : {"--gpu", "--gemm", "--dtype", "--measured"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

TEST(ComputeCommand, BadInputNamesTheOptionAndValue) {
  const std::string a100 = "A100-SXM4-80GB";
  const std::string bad_csv = write_text("bad.csv", "gpu,kind,dtype,m,n,k,value,unit,source\n"
                                                    "A100-SXM4-80GB,gemm,fp16,1024,x,1024,119.4,TFLOP/s,test\n");
  const std::string headless = write_text("headless.csv", "# only a comment\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--gemm", "1,1,1"}, "--gpu: missing"},
      {{"--gpu", "V100", "--gemm", "1,1,1"}, "--gpu V100: unknown GPU type (known: "},
      {{"--gpu", "B200", "--gemm", "1,1,1"}, "--gpu B200: no compute model"},
      {{"--gpu", a100}, "--gemm: missing"},
      {{"--gpu", a100, "--gemm", "4096,4096"}, "--gemm 4096,4096: expected M,N,K or M,N,K,BATCH"},
      {{"--gpu", a100, "--gemm", "4096,0,4096"}, "--gemm 4096,0,4096: each of M,N,K,BATCH must be a positive integer"},
      {{"--gpu", a100, "--gemm", "4096,-8,4096"}, "--gemm 4096,-8,4096: "},
      {{"--gpu", a100, "--gemm", "4096,x,4096"}, "--gemm 4096,x,4096: "},
      {{"--gpu", a100, "--gemm", "2147483649,1,1"}, "--gemm 2147483649,1,1: "},
      {{"--gpu", a100, "--gemm", "1,1,1,99999999999999"}, "--gemm 1,1,1,99999999999999: "},
      {{"--gpu", a100, "--gemm", "2147483648,2147483648,1,2147483648"}, "exceeds 2^62 elements"},
      {{"--gpu", a100, "--gemm", "1,1,1", "--dtype", "fp12"}, "--dtype fp12: unknown dtype"},
      {{"--gpu", a100, "--measured", "/nonexistent/m.csv"}, "--measured /nonexistent/m.csv: cannot read"},
      {{"--gpu", a100, "--measured", bad_csv}, "--measured " + bad_csv + ":2: n: "},
      {{"--gpu", a100, "--measured", headless}, "--measured " + headless + ": no header line"},
      {{"--gpu", a100, "--colour"}, "colour"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome r = compute(args);
    EXPECT_NE(r.error.find(expected), std::string::npos) << expected << "\n got: " << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }
}

TEST(ComputeCommand, LargestShapeIsAccepted) {
  const Outcome r = compute({"--gpu", "A100-SXM4-80GB", "--gemm", "2147483648,64,64"});
  EXPECT_EQ(r.status, 0) << r.error;
  EXPECT_NE(r.out.find("memory"), std::string::npos) << r.out;
}

}  // namespace
