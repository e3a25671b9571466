// The calibration file: what save() writes load() reads back, and every malformed file gets one
// line naming the file, the line and the key.
#include <gtest/gtest.h>

#include "calibration/kernel_table.h"
#include "trace_builder.h"
#include "workloads/errors.h"

using namespace tessera;
using namespace tessera::calibration;
using tessera::calibration::testing::read_text;
using tessera::calibration::testing::write_text;
using workloads::DType;
using workloads::KernelKind;

namespace {

KernelKey gemm(int64_t m, int64_t n, int64_t k, DType dtype = DType::FP16) {
  KernelKey key;
  key.kind = KernelKind::Gemm;
  key.dtype = dtype;
  key.m = m;
  key.n = n;
  key.k = k;
  return key;
}

KernelKey elements(KernelKind kind, int64_t count, DType dtype = DType::FP16) {
  KernelKey key;
  key.kind = kind;
  key.dtype = dtype;
  key.elements = count;
  return key;
}

KernelTable example_table() {
  KernelTable table;
  table.set_gpu("A100-SXM4-80GB");
  table.set_source("megatron rank0.json.gz: a test");
  table.add({gemm(8192, 1536, 4096), 400.05e-6, 40});
  KernelKey scores = gemm(2048, 2048, 64);
  scores.kind = KernelKind::AttentionGemm;
  scores.batch = 32;
  table.add({scores, 294.0e-6, 40});
  table.add({elements(KernelKind::Softmax, 134217728), 425.625e-6, 40});
  table.add({elements(KernelKind::Norm, 33554432, DType::BF16), 136.37037e-6, 81});
  return table;
}

std::string load_error(const std::string& name, const std::string& text) {
  const std::string path = write_text(name, text);
  try {
    KernelTable::load(path);
  } catch (const workloads::InputError& e) {
    return e.what();
  }
  return "no error";
}

const char* kHeader = "gpu: A100-SXM4-80GB\nsource: test\nkernels:\n";

TEST(KernelTable, SaveThenLoadGivesTheSameTable) {
  const KernelTable table = example_table();
  const std::string path = write_text("roundtrip.yaml", "");
  table.save(path);
  const KernelTable back = KernelTable::load(path);
  EXPECT_EQ(back.gpu(), table.gpu());
  EXPECT_EQ(back.source(), table.source());
  ASSERT_EQ(back.kernels().size(), table.kernels().size());
  for (size_t i = 0; i < table.kernels().size(); ++i) {
    const MeasuredKernel &a = table.kernels()[i], &b = back.kernels()[i];
    EXPECT_TRUE(a.key == b.key) << i;
    EXPECT_EQ(a.key.batch, b.key.batch) << i;
    EXPECT_NEAR(a.seconds, b.seconds, 0.001e-6) << i;  // us with 3 decimals
    EXPECT_EQ(a.samples, b.samples) << i;
  }
  // One flow-style line per kernel, as in the header comment.
  const std::string text = read_text(path);
  EXPECT_NE(text.find("  - {kind: gemm, dtype: fp16, m: 8192, n: 1536, k: 4096, us: 400.050, samples: 40}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  - {kind: attention_gemm, dtype: fp16, batch: 32, m: 2048, n: 2048, k: 64, us: "
                      "294.000, samples: 40}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  - {kind: norm, dtype: bf16, elements: 33554432, us: 136.370, samples: 81}\n"),
            std::string::npos)
      << text;
}

TEST(KernelTable, AddMergesBySampleWeightedMean) {
  KernelTable table;
  table.add({gemm(64, 64, 64), 10e-6, 1});
  table.add({gemm(64, 64, 64), 40e-6, 3});
  table.add({gemm(64, 64, 64, DType::BF16), 5e-6, 1});
  ASSERT_EQ(table.kernels().size(), 2u);
  EXPECT_NEAR(*table.seconds(gemm(64, 64, 64)), 32.5e-6, 1e-12);
  EXPECT_EQ(table.kernels()[0].samples, 4);
  EXPECT_FALSE(table.seconds(gemm(64, 64, 32)).has_value());
  // Non-GEMM kinds match on the element count only.
  KernelKey softmax = elements(KernelKind::Softmax, 1000);
  table.add({softmax, 7e-6, 2});
  softmax.m = 99;
  EXPECT_NEAR(*table.seconds(softmax), 7e-6, 1e-12);
}

TEST(KernelTable, LoadAcceptsTheHeaderExample) {
  const std::string path = write_text("header.yaml", std::string(kHeader) +
      "  - {kind: gemm, dtype: fp16, m: 8192, n: 1536, k: 4096, us: 400.1, samples: 40}\n"
      "  - {kind: attention_gemm, dtype: fp16, batch: 16, m: 2048, n: 2048, k: 128, us: 181.0, samples: 40}\n"
      "  - {kind: softmax, dtype: fp16, elements: 268435456, us: 425.6}\n");
  const KernelTable table = KernelTable::load(path);
  ASSERT_EQ(table.kernels().size(), 3u);
  EXPECT_EQ(table.kernels()[1].key.batch, 16);
  EXPECT_EQ(table.kernels()[2].samples, 1);  // samples defaults to 1
  EXPECT_NEAR(table.kernels()[2].seconds, 425.6e-6, 1e-12);
}

struct BadFile {
  const char* name;
  std::string kernels;   // lines after the header, or a whole file when `whole`
  const char* expected;  // what the message holds after "FILE:"
  bool whole = false;
};

TEST(KernelTable, EveryLoadErrorNamesFileLineAndKey) {
  const std::vector<BadFile> cases = {
      {"unknown_key", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 4, colour: red}\n",
       ":4: kernels[0].colour: unknown key (accepted: kind, dtype, batch, m, n, k, us, samples)"},
      {"shape_of_other_kind", "  - {kind: softmax, dtype: fp16, elements: 8, m: 2, us: 4}\n",
       ":4: kernels[0].m: unknown key (accepted: kind, dtype, elements, us, samples)"},
      {"unknown_kind", "  - {kind: gem, dtype: fp16, m: 1, n: 2, k: 3, us: 4}\n",
       ":4: kernels[0].kind: unknown kind (got gem; accepted: gemm, attention_gemm"},
      {"unknown_dtype", "  - {kind: gemm, dtype: fp64, m: 1, n: 2, k: 3, us: 4}\n",
       ":4: kernels[0].dtype: unknown dtype (got fp64; accepted: fp32, tf32, fp16, bf16, fp8)"},
      {"zero_us", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 0}\n",
       ":4: kernels[0].us: expected a positive, finite number (got 0)"},
      {"negative_us", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: -5}\n",
       ":4: kernels[0].us: expected a positive, finite number (got -5)"},
      {"infinite_us", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: .inf}\n",
       ":4: kernels[0].us: expected a positive, finite number (got .inf)"},
      {"nan_us", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: .nan}\n",
       ":4: kernels[0].us: expected a positive, finite number (got .nan)"},
      {"missing_us", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3}\n", ":4: kernels[0].us: missing"},
      {"missing_k", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, us: 3}\n", ":4: kernels[0].k: missing"},
      {"missing_batch", "  - {kind: attention_gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 3}\n",
       ":4: kernels[0].batch: missing"},
      {"missing_elements", "  - {kind: norm, dtype: fp16, us: 3}\n", ":4: kernels[0].elements: missing"},
      {"fractional_m", "  - {kind: gemm, dtype: fp16, m: 1.5, n: 2, k: 3, us: 4}\n",
       ":4: kernels[0].m: expected a positive integer (got 1.5)"},
      {"zero_elements", "  - {kind: norm, dtype: fp16, elements: 0, us: 3}\n",
       ":4: kernels[0].elements: expected a positive integer (got 0)"},
      {"duplicate_key", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 4}\n"
                        "  - {kind: gemm, dtype: fp16, m: 1, m: 1, n: 2, k: 3, us: 4}\n",
       ":5: key 'kernels[1].m': duplicate key"},
      {"duplicate_kernel", "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 4}\n"
                           "  - {kind: gemm, dtype: fp16, m: 1, n: 2, k: 3, us: 5}\n",
       ":5: kernels[1]: duplicate kernel (gemm, fp16, m 1, n 2, k 3 is listed before)"},
      {"not_a_mapping", "  - gemm 1 2 3\n", ":4: kernels[0]: expected a mapping"},
      {"gpu_missing", "source: x\nkernels: []\n", ":1: gpu: missing", true},
      {"gpu_empty", "gpu: \"\"\nkernels: []\n", ":1: gpu: unknown GPU type (got nothing; accepted: A100-SXM4-80GB", true},
      {"gpu_unknown", "gpu: V100\nkernels: []\n", ":1: gpu: unknown GPU type (got V100; accepted: A100-SXM4-80GB", true},
      {"top_duplicate", "gpu: A100-SXM4-80GB\ngpu: B200\nkernels: []\n", ":2: key 'gpu': duplicate key", true},
      {"top_unknown", "gpu: A100-SXM4-80GB\nkernel: []\n", ":2: kernel: unknown key (accepted: gpu, source, kernels)", true},
      {"kernels_missing", "gpu: A100-SXM4-80GB\n", ":1: kernels: missing", true},
      {"kernels_not_list", "gpu: A100-SXM4-80GB\nkernels: 3\n", ":2: kernels: expected a list of kernels", true},
  };
  for (const BadFile& c : cases) {
    const std::string file = std::string(c.name) + ".yaml";
    const std::string message = load_error(file, c.whole ? c.kernels : kHeader + c.kernels);
    const std::string expected = file + c.expected;
    EXPECT_NE(message.find(expected), std::string::npos) << c.name << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.name << ": " << message;
  }
}

TEST(KernelTable, SyntaxErrorsAndMissingFilesAreInputErrors) {
  EXPECT_NE(load_error("syntax.yaml", "gpu: [A100\n").find("syntax.yaml:"), std::string::npos);
  try {
    KernelTable::load("/nonexistent/calib.yaml");
    FAIL() << "no error";
  } catch (const workloads::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/calib.yaml"), std::string::npos) << e.what();
  }
}

}  // namespace
