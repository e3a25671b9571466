// The Kineto importer: small traces written here (both layouts, plain and gzip) with known
// times and shapes, and the real Megatron (TP 8, A100) and DLRM (V100) traces under data/.
#include <gtest/gtest.h>

#include <cstdio>
#include <iostream>

#include "calibration/kineto.h"
#include "trace_builder.h"
#include "workloads/errors.h"

using namespace tessera;
using namespace tessera::calibration;
using namespace tessera::calibration::testing;
using workloads::DType;
using workloads::KernelKind;

namespace {

KernelKey gemm_key(KernelKind kind, int64_t batch, int64_t m, int64_t n, int64_t k, DType dtype) {
  KernelKey key;
  key.kind = kind;
  key.dtype = dtype;
  key.batch = batch;
  key.m = m;
  key.n = n;
  key.k = k;
  return key;
}

KernelKey elements_key(KernelKind kind, int64_t elements, DType dtype) {
  KernelKey key;
  key.kind = kind;
  key.dtype = dtype;
  key.elements = elements;
  return key;
}

const MeasuredKernel* find(const KernelTable& table, const KernelKey& key) {
  for (const MeasuredKernel& k : table.kernels())
    if (k.key == key && k.key.batch == key.batch) return &k;
  return nullptr;
}

// Expects the key with this mean (us) over this many samples.
void expect_kernel(const KernelTable& table, const KernelKey& key, double us, int samples) {
  const MeasuredKernel* k = find(table, key);
  ASSERT_NE(k, nullptr) << workloads::to_string(key.kind) << " " << workloads::to_string(key.dtype)
                        << " " << key.shape();
  EXPECT_NEAR(k->seconds * 1e6, us, 1e-6) << key.shape();
  EXPECT_EQ(k->samples, samples) << key.shape();
}

const json kHalf2 = {"c10::Half", "c10::Half"};

// The same ops in either layout: GEMMs, attention, softmax (two kernels), skipped activities.
TraceBuilder newer_ops(TraceBuilder t) {
  const int qkv1 = t.op("aten::mm", 100, 50, {{8192, 4096}, {4096, 1536}}, kHalf2);
  t.kernel(qkv1, 110, "sm80_xmma_gemm_f16f16_f16f32", 400);
  const int qkv2 = t.op("aten::mm", 200, 50, {{8192, 4096}, {4096, 1536}}, kHalf2);
  t.kernel(qkv2, 210, "sm80_xmma_gemm_f16f16_f16f32", 410);
  const int addmm = t.op("aten::addmm", 300, 50, {{1536}, {8192, 4096}, {4096, 1536}, {}, {}},
                         {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"});
  t.kernel(addmm, 310, "sm80_gemm_bf16", 300);
  const int scores = t.op("aten::baddbmm", 400, 50, {{32, 2048, 2048}, {32, 2048, 64}, {32, 64, 2048}, {}, {}},
                          {"c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"});
  t.kernel(scores, 410, "ampere_fp16_s1688gemm", 294);
  const int values = t.op("aten::bmm", 500, 50, {{32, 2048, 2048}, {32, 2048, 64}}, kHalf2);
  t.kernel(values, 510, "ampere_fp16_s16816gemm", 184);
  const int softmax = t.op("ScaledUpperTriangMaskedSoftmax", 600, 50, {{32, 2048, 2048}}, {"c10::Half"});
  t.kernel(softmax, 610, "scaled_upper_triang_masked_softmax_warp_forward", 100);
  t.kernel(softmax, 620, "scaled_upper_triang_masked_softmax_warp_forward", 50);
  const int allreduce = t.op("record_param_comms", 700, 50, {{{2048, 4, 4096}}}, {"TensorList"});
  t.kernel(allreduce, 710, "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*)", 2800);
  t.kernel(allreduce, 720, "Memset (Device)", 1, "gpu_memset");
  t.kernel(allreduce, 730, "Memcpy DtoD (Device -> Device)", 3, "gpu_memcpy");
  t.gpu("orphan_kernel", 800, 7, 99999);  // no launch in the trace
  return t;
}

void expect_newer_ops(const KernelTable& table) {
  EXPECT_EQ(table.kernels().size(), 5u);
  const DType h = DType::FP16;
  expect_kernel(table, gemm_key(KernelKind::Gemm, 1, 8192, 1536, 4096, h), 405, 2);
  expect_kernel(table, gemm_key(KernelKind::Gemm, 1, 8192, 1536, 4096, DType::BF16), 300, 1);
  expect_kernel(table, gemm_key(KernelKind::AttentionGemm, 32, 2048, 2048, 64, h), 294, 1);
  expect_kernel(table, gemm_key(KernelKind::AttentionGemm, 32, 2048, 64, 2048, h), 184, 1);
  expect_kernel(table, elements_key(KernelKind::Softmax, 32LL * 2048 * 2048, h), 150, 1);  // one op
}

void expect_skips(const TraceSummary& s) {
  EXPECT_EQ(s.skipped.at("NCCL"), 1);
  EXPECT_EQ(s.skipped.at("memset"), 1);
  EXPECT_EQ(s.skipped.at("memcpy"), 1);
  EXPECT_EQ(s.skipped.at("not linked to a cpu op"), 1);
  EXPECT_EQ(s.unlinked.at("orphan_kernel"), 1);
}

TEST(Kineto, NewerLayoutLinksLaunchesByExternalId) {
  const std::string path = write_text("newer.json", newer_ops(TraceBuilder()).text());
  const KinetoImport got = import_kineto_traces({path});
  expect_newer_ops(got.table);
  ASSERT_EQ(got.traces.size(), 1u);
  const TraceSummary& s = got.traces[0];
  EXPECT_EQ(s.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(got.table.gpu(), "A100-SXM4-80GB");
  EXPECT_EQ(s.device, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.activities, 11);
  EXPECT_EQ(s.imported_kernels, 7);
  EXPECT_EQ(s.ops, 6);
  EXPECT_EQ(s.linked_by_nesting, 0);  // launches are on another thread: only the id links them
  EXPECT_EQ(s.linked_by_external_id, 7);  // NCCL, memset and memcpy are skipped before linking
  expect_skips(s);
}

// Ids that no int64 holds (a fuzz finding: 1e65 was converted as is) are no ids: the events
// they would link stay unlinked, and the rest imports as before.
TEST(Kineto, IdsBeyondInt64AreNoIds) {
  json trace = json::parse(newer_ops(TraceBuilder()).text());
  int changed = 0;
  for (json& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel" || !e.contains("args")) continue;
    if (changed == 0) e["args"]["correlation"] = 1e65;
    if (changed == 1) e["args"]["correlation"] = "nan";
    if (changed == 2) e["args"]["correlation"] = -1e30;
    ++changed;
  }
  ASSERT_EQ(changed, 9);
  const KinetoImport got = import_kineto_traces({write_text("huge_ids.json", trace.dump())});
  ASSERT_EQ(got.traces.size(), 1u);
  EXPECT_EQ(got.traces[0].activities, 11);
  EXPECT_EQ(got.traces[0].imported_kernels, 4);  // 7, less the three kernels without an id
}

TEST(Kineto, OlderLayoutLinksLaunchesByTimeNesting) {
  const std::string path = write_text("older.json", newer_ops(TraceBuilder("NVIDIA A100-SXM4-80GB", false)).text());
  const KinetoImport got = import_kineto_traces({path});
  expect_newer_ops(got.table);
  EXPECT_EQ(got.traces[0].linked_by_external_id, 0);
  EXPECT_EQ(got.traces[0].linked_by_nesting, 7);
  expect_skips(got.traces[0]);
}

// Megatron's forward ops as an older trace records them: nested ops, fused functions, torch.compile.
std::string megatron_like_trace() {
  TraceBuilder t("NVIDIA H100 80GB HBM3", false);
  t.op("LinearWithGradAccumulationAndAsyncCommunication", 0, 200, {{2048, 4, 4096}, {1536, 4096}, {1536}}, json::array({"c10::Half", "c10::Half", "c10::Half"}));
  t.op("aten::matmul", 10, 100, {{2048, 4, 4096}, {4096, 1536}}, kHalf2);
  const int mm = t.op("aten::mm", 20, 50, {{8192, 4096}, {4096, 1536}}, kHalf2);
  t.kernel(mm, 30, "cutlass_80_tensorop_f16_s16816gemm", 400);
  const int copy = t.op("aten::contiguous", 80, 20, {{2048, 4, 1536}}, {"c10::Half"});
  t.kernel(copy, 85, "elementwise_kernel", 20);                // under matmul: part of its sample
  const int bias = t.op("aten::add", 120, 30, {{2048, 4, 1536}, {1536}, {}}, {"c10::Half", "c10::Half", "Scalar"});
  t.kernel(bias, 125, "elementwise_kernel", 54);               // a broadcast add: bias
  const int ln = t.op("FusedLayerNormAffineFunction", 300, 50, {{2048, 4, 4096}, {4096}, {4096}}, json::array({"c10::Half", "c10::Half", "c10::Half"}));
  t.kernel(ln, 310, "void cuApplyLayerNorm<c10::Half, float, c10::Half>", 136);
  t.op("GeLUFunction", 400, 100, {{2048, 4, 2048}, {2048}}, kHalf2);
  t.op("Torch-Compiled Region", 410, 80);
  const int gelu = t.op("triton_poi_fused_add_mul_tanh_0", 420, 40);
  t.kernel(gelu, 425, "triton__0d1d2d3de", 43);                 // GeLUFunction's shape
  t.op("Torch-Compiled Region", 500, 80);
  const int fused_add = t.op("triton_poi_fused_add_0", 510, 40);
  t.kernel(fused_add, 515, "triton__0d1d2d3d4de", 113);         // no shapes anywhere
  const int residual = t.op("aten::add", 600, 30, {{2048, 4, 4096}, {2048, 4, 4096}, {}}, {"c10::Half", "c10::Half", "Scalar"});
  t.kernel(residual, 605, "vectorized_elementwise_kernel", 113);
  t.op("aten::embedding", 700, 100, {{2048, 4096}, {4, 2048}}, {"c10::Half", "long int"});
  const int lookup = t.op("aten::index_select", 710, 50, {{2048, 4096}, {}, {8192}}, {"c10::Half", "Scalar", "long int"});
  t.kernel(lookup, 715, "indexSelectLargeIndex", 410);
  t.op("aten::dropout", 800, 60, {{2048, 4, 4096}, {}, {}}, {"c10::Half", "Scalar", "Scalar"});
  const int dropout = t.op("aten::native_dropout", 805, 40, {{2048, 4, 4096}, {}, {}}, {"c10::Half", "Scalar", "Scalar"});
  t.kernel(dropout, 810, "fused_dropout_kernel_vec", 90);
  const int untyped = t.op("aten::mul", 900, 20, {{1024}, {1024}});
  t.kernel(untyped, 905, "vectorized_elementwise_kernel<bf16>", 2);  // dtype from the name
  return t.text();
}

TEST(Kineto, OlderLayoutClassifiesNestedAndFusedOps) {
  const KinetoImport got = import_kineto_traces({write_text("megatron_like.json", megatron_like_trace())});
  const KernelTable& table = got.table;
  EXPECT_EQ(table.gpu(), "H100-SXM5-80GB");
  const DType h = DType::FP16;
  const int64_t tokens = 2048 * 4;
  // The outermost op that names a kind holds the sample: matmul's GEMM and its copy.
  expect_kernel(table, gemm_key(KernelKind::Gemm, 1, tokens, 1536, 4096, h), 420, 1);
  expect_kernel(table, elements_key(KernelKind::Bias, tokens * 1536, h), 54, 1);
  expect_kernel(table, elements_key(KernelKind::Norm, tokens * 4096, h), 136, 1);
  expect_kernel(table, elements_key(KernelKind::Activation, tokens * 2048, h), 43, 1);
  expect_kernel(table, elements_key(KernelKind::Residual, tokens * 4096, h), 113, 1);
  expect_kernel(table, elements_key(KernelKind::Embedding, tokens * 4096, h), 410, 1);
  expect_kernel(table, elements_key(KernelKind::Dropout, tokens * 4096, h), 90, 1);
  expect_kernel(table, elements_key(KernelKind::Elementwise, 1024, DType::BF16), 2, 1);
  EXPECT_EQ(table.kernels().size(), 8u);
  EXPECT_EQ(got.traces[0].skipped.at("no input shapes recorded"), 1);
  EXPECT_EQ(got.traces[0].linked_by_nesting, 10);
}

TEST(Kineto, GzipTracesReadLikePlainOnes) {
  const std::string text = megatron_like_trace();
  const KernelTable plain = import_kineto({write_text("plain.json", text)});
  const KernelTable gz = import_kineto({write_gzip("compressed.json.gz", text)});
  ASSERT_EQ(plain.kernels().size(), gz.kernels().size());
  for (size_t i = 0; i < plain.kernels().size(); ++i) {
    EXPECT_TRUE(plain.kernels()[i].key == gz.kernels()[i].key);
    EXPECT_DOUBLE_EQ(plain.kernels()[i].seconds, gz.kernels()[i].seconds);
  }
  // Several traces: one mean over all their samples.
  const KernelTable both = import_kineto({write_text("a.json", text), write_gzip("b.json.gz", text)});
  EXPECT_EQ(both.kernels()[0].samples, 2);
  EXPECT_EQ(both.source(), "kineto: a.json b.json.gz");
}

std::string import_error(const std::vector<std::string>& paths, const std::string& gpu = "") {
  try {
    import_kineto_traces(paths, gpu);
  } catch (const workloads::InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Kineto, GpuNamesMapToTesseraTypes) {
  EXPECT_EQ(gpu_type_of_device("NVIDIA A100-SXM4-80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(gpu_type_of_device("NVIDIA H100 80GB HBM3"), "H100-SXM5-80GB");
  EXPECT_EQ(gpu_type_of_device("NVIDIA H200"), "H200-SXM-141GB");
  EXPECT_EQ(gpu_type_of_device("NVIDIA B200"), "B200");
  EXPECT_EQ(gpu_type_of_device("Tesla V100-SXM2-32GB"), "");
  EXPECT_EQ(gpu_type_of_device("NVIDIA A100-SXM4-40GB"), "");
  const std::string v100 = write_text("v100.json", newer_ops(TraceBuilder("Tesla V100-SXM2-32GB")).text());
  const std::string error = import_error({v100});
  EXPECT_NE(error.find("v100.json: deviceProperties[0].name: unknown GPU (got 'Tesla V100-SXM2-32GB'; "
                       "tessera knows: A100-SXM4-80GB, B200, H100-SXM5-80GB"),
            std::string::npos)
      << error;
  // Named explicitly, the GPU type is the table's; a known, different device is an error.
  EXPECT_EQ(import_kineto_traces({v100}, "A100-SXM4-80GB").table.gpu(), "A100-SXM4-80GB");
  EXPECT_NE(import_error({v100}, "V100").find("gpu: unknown GPU type (got V100; accepted: A100-SXM4-80GB"),
            std::string::npos);
  const std::string a100 = write_text("a100.json", newer_ops(TraceBuilder()).text());
  EXPECT_NE(import_error({a100}, "B200").find("a100.json: deviceProperties[0].name: recorded on "
                                              "'NVIDIA A100-SXM4-80GB' (A100-SXM4-80GB), not on B200"),
            std::string::npos);
  const std::string h100 = write_text("h100.json", newer_ops(TraceBuilder("NVIDIA H100 80GB HBM3")).text());
  EXPECT_NE(import_error({a100, h100}).find("h100.json: recorded on H100-SXM5-80GB"), std::string::npos);
}

TEST(Kineto, UnreadableTracesAreInputErrors) {
  EXPECT_NE(import_error({"/nonexistent/trace.json"}).find("/nonexistent/trace.json: cannot open"),
            std::string::npos);
  EXPECT_NE(import_error({write_text("broken.json", "{\"traceEvents\": [")}).find("broken.json: not a JSON trace"),
            std::string::npos);
  EXPECT_NE(import_error({write_text("other.json", "{\"events\": []}")}).find("other.json: no traceEvents"),
            std::string::npos);
  // A number JSON cannot hold (a fuzz finding: nlohmann's out_of_range, not a parse_error).
  EXPECT_NE(import_error({write_text("huge.json", "{\"traceEvents\": [], \"ts\": 55e555555}")})
                .find("huge.json: not a JSON trace"),
            std::string::npos);
  EXPECT_NE(import_error({temp_dir()}).find("cannot read (a directory)"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The real Megatron-LM trace: GPT, hidden 4096, TP 8, micro-batch 4, seq 2048 (8192 tokens).

const std::string kMegatron = std::string(TESSERA_CALIBRATION_DATA) + "/megatron_tp8_a100/";

void print(const KinetoImport& got) {
  for (const TraceSummary& t : got.traces) {
    std::cout << t.path << ": " << t.activities << " activities, " << t.imported_kernels << " kernels in "
              << t.ops << " ops\n";
    for (const auto& [reason, count] : t.skipped) std::cout << "  skipped " << count << " " << reason << "\n";
  }
  for (const MeasuredKernel& k : got.table.kernels())
    std::printf("  %-15s %-5s %-36s %9.3f us %4d samples\n", workloads::to_string(k.key.kind),
                workloads::to_string(k.key.dtype), k.key.shape().c_str(), k.seconds * 1e6, k.samples);
}

void expect_mean(const KernelTable& table, const KernelKey& key, double us, int samples) {
  const MeasuredKernel* k = find(table, key);
  ASSERT_NE(k, nullptr) << workloads::to_string(key.kind) << " " << key.shape();
  EXPECT_NEAR(k->seconds * 1e6, us, 0.01 * us) << key.shape();
  EXPECT_EQ(k->samples, samples) << key.shape();
}

TEST(KinetoMegatron, Rank0HasTheTransformerLayerGemms) {
  const KinetoImport got = import_kineto_traces({kMegatron + "rank0.json.gz"});
  print(got);
  const KernelTable& t = got.table;
  EXPECT_EQ(t.gpu(), "A100-SXM4-80GB");
  const DType h = DType::FP16;
  const int64_t tokens = 4 * 2048, hidden = 4096, tp = 8;
  // Means from the trace (40 layers, one forward step): QKV, projection, fc1, fc2.
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, 3 * hidden / tp, hidden, h), 400.05, 40);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, hidden, hidden / tp, h), 160.225, 40);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, 4 * hidden / tp, hidden, h), 522.075, 40);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, hidden, 4 * hidden / tp, h), 566.4, 40);
  // Attention: scores (baddbmm) and values (bmm) over micro-batch x heads per rank; the trace
  // records [32, 2048, 64]: 64 heads of 64, 8 per rank, times micro-batch 4.
  const int64_t seq = 2048, head_dim = 64, batch = 4 * (hidden / head_dim) / tp;
  expect_mean(t, gemm_key(KernelKind::AttentionGemm, batch, seq, seq, head_dim, h), 294.0, 40);
  expect_mean(t, gemm_key(KernelKind::AttentionGemm, batch, seq, head_dim, seq, h), 184.325, 40);
  expect_mean(t, elements_key(KernelKind::Softmax, batch * seq * seq, h), 425.625, 40);
  expect_mean(t, elements_key(KernelKind::Norm, tokens * hidden, h), 136.370, 81);
  const TraceSummary& s = got.traces[0];
  EXPECT_EQ(s.activities, 690 + 81 + 6);  // kernels, memsets, memcpys
  EXPECT_EQ(s.skipped.at("NCCL"), 84);
  EXPECT_GT(s.linked_by_nesting, 0);  // its launches' External id is their own correlation
  EXPECT_EQ(s.linked_by_external_id, 0);
}

TEST(KinetoMegatron, EightRanksAverageTogether) {
  std::vector<std::string> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(kMegatron + "rank" + std::to_string(r) + ".json.gz");
  const KinetoImport got = import_kineto_traces(ranks);
  ASSERT_EQ(got.traces.size(), 8u);
  const KernelTable& t = got.table;
  const DType h = DType::FP16;
  // Means over the 8 ranks' 320 layers, as the trace holds them.
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, 8192, 1536, 4096, h), 404.331, 320);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, 8192, 4096, 512, h), 160.956, 320);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, 8192, 2048, 4096, h), 527.544, 320);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, 8192, 4096, 2048, h), 573.525, 320);
  expect_mean(t, gemm_key(KernelKind::AttentionGemm, 32, 2048, 2048, 64, h), 294.669, 320);
  expect_mean(t, gemm_key(KernelKind::AttentionGemm, 32, 2048, 64, 2048, h), 183.644, 320);
  EXPECT_EQ(t.source(), "kineto: rank0.json.gz rank1.json.gz rank2.json.gz rank3.json.gz rank4.json.gz "
                        "rank5.json.gz rank6.json.gz rank7.json.gz");
}

// ---------------------------------------------------------------------------------------------
// A GPT layer's forward and backward on one H100 (newer layout: launches carry the External id
// of their cpu op), recorded by tools/measure_gpu.py.

const std::string kHopperLayer = std::string(TESSERA_CALIBRATION_DATA) + "/gpt_layer_h100/layer.json.gz";

TEST(KinetoHopper, GptLayerOnH100ImportsItsGemmsByExternalId) {
  const KinetoImport got = import_kineto_traces({kHopperLayer});
  print(got);
  const KernelTable& t = got.table;
  EXPECT_EQ(t.gpu(), "H100-SXM5-80GB");
  const DType b = DType::BF16;
  const int64_t tokens = 4 * 2048, hidden = 4096;
  // Five steps: the forward GEMMs (QKV, fc1) and their data and weight gradients.
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, 3 * hidden, hidden, b), 1015.590, 5);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, hidden, 3 * hidden, b), 965.547, 5);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, 3 * hidden, hidden, tokens, b), 991.832, 5);
  expect_mean(t, gemm_key(KernelKind::Gemm, 1, tokens, 4 * hidden, hidden, b), 1353.015, 10);
  expect_mean(t, elements_key(KernelKind::Norm, tokens * hidden, b), 114.798, 20);
  const TraceSummary& s = got.traces[0];
  EXPECT_EQ(s.linked_by_external_id, 240);
  EXPECT_EQ(s.linked_by_nesting, 0);
}

// ---------------------------------------------------------------------------------------------
// The real DLRM trace (older layout) was recorded on V100s, which tessera does not model.

const std::string kDlrm = std::string(TESSERA_CALIBRATION_DATA) + "/dlrm_v100/worker0_step_12.json.gz";

TEST(KinetoDlrm, V100IsAnUnknownGpu) {
  const std::string error = import_error({kDlrm});
  EXPECT_NE(error.find("unknown GPU (got 'Tesla V100-SXM2-32GB'; tessera knows: A100-SXM4-80GB"),
            std::string::npos)
      << error;
  EXPECT_NE(import_error({kDlrm}, "V100").find("gpu: unknown GPU type (got V100"), std::string::npos);
}

TEST(KinetoDlrm, OlderLayoutImportsByTimeNesting) {
  const KinetoImport got = import_kineto_traces({kDlrm}, "A100-SXM4-80GB");
  print(got);
  const TraceSummary& s = got.traces[0];
  EXPECT_EQ(s.linked_by_external_id, 0);
  EXPECT_GT(s.linked_by_nesting, 200);
  // Its bottom MLP's first layer: addmm of 16 x 13 by 13 x 256, in fp32.
  const MeasuredKernel* mlp = find(got.table, gemm_key(KernelKind::Gemm, 1, 16, 256, 13, DType::FP32));
  ASSERT_NE(mlp, nullptr);
  EXPECT_GT(mlp->seconds, 0);
}

}  // namespace
