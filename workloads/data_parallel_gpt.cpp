#include "workloads/data_parallel_gpt.h"

#include <stdexcept>
#include <string>

namespace tessera::workloads {
namespace {

int64_t ffn_of(const GptConfig& m) { return m.ffn_hidden > 0 ? m.ffn_hidden : 4 * m.hidden; }

// Appends ops to one program, chaining them on their streams.
class ProgramWriter {
 public:
  ProgramWriter(Job& job, Program& program) : job_(job), program_(program) {}

  OpId gemm(const std::string& name, ComputePhase phase, DType dtype, int64_t m, int64_t n,
            int64_t k, std::vector<OpId> deps = {}) {
    Op op;
    op.kind = OpKind::Compute;
    op.stream = kComputeStream;
    op.phase = phase;
    op.dtype = dtype;
    op.gemm = GemmShape{m, n, k};
    op.flops = 2.0 * double(m) * double(n) * double(k);
    op.bytes = double(dtype_bytes(dtype)) * double(m * k + k * n + m * n);
    return add(name, std::move(op), std::move(deps));
  }

  OpId kernel(const std::string& name, ComputePhase phase, DType dtype, double flops,
              double bytes) {
    Op op;
    op.kind = OpKind::Compute;
    op.stream = kComputeStream;
    op.phase = phase;
    op.dtype = dtype;
    op.flops = flops;
    op.bytes = bytes;
    return add(name, std::move(op), {});
  }

  OpId allreduce(const std::string& name, uint64_t bytes, std::vector<OpId> deps) {
    Op op;
    op.kind = OpKind::Collective;
    op.stream = kCommStream;
    op.collective = CollectiveKind::AllReduce;
    op.message_bytes = bytes;
    op.slot = 0;
    return add(name, std::move(op), std::move(deps));
  }

  static constexpr uint16_t kComputeStream = 0;
  static constexpr uint16_t kCommStream = 1;

 private:
  OpId add(const std::string& name, Op op, std::vector<OpId> deps) {
    op.name = job_.intern(name);
    op.deps = std::move(deps);
    program_.ops.push_back(std::move(op));
    return static_cast<OpId>(program_.ops.size() - 1);
  }
  Job& job_;
  Program& program_;
};

void require_positive(int64_t value, const char* what) {
  if (value <= 0)
    throw std::invalid_argument(std::string(what) + " must be positive, got " +
                                std::to_string(value));
}

}  // namespace

int64_t layer_parameters(const GptConfig& m) {
  const int64_t h = m.hidden, f = ffn_of(m);
  // QKV (3h^2 + 3h), projection (h^2 + h), MLP (2hf + f + h), two layer norms (4h).
  return 3 * h * h + 3 * h + h * h + h + 2 * h * f + f + h + 4 * h;
}

int64_t model_parameters(const GptConfig& m) {
  return m.layers * layer_parameters(m) + m.vocab * m.hidden + m.seq_length * m.hidden +
         2 * m.hidden;
}

double iteration_model_flops(const GptConfig& m, int64_t global_batch) {
  const double B = double(global_batch), s = double(m.seq_length), l = double(m.layers),
               h = double(m.hidden), f = double(ffn_of(m)), V = double(m.vocab);
  // Per layer forward: QKV 6Bsh^2, attention scores and values 4Bs^2h, projection 2Bsh^2,
  // MLP 4Bshf; logits 2BshV. Backward is twice the forward.
  const double layer = 6 * B * s * h * h + 4 * B * s * s * h + 2 * B * s * h * h + 4 * B * s * h * f;
  return 3.0 * (l * layer + 2 * B * s * h * V);
}

Job build_data_parallel_gpt(const GptConfig& m, const DataParallelConfig& st) {
  require_positive(m.layers, "layers");
  require_positive(m.hidden, "hidden");
  require_positive(m.heads, "heads");
  require_positive(m.seq_length, "seq");
  require_positive(m.vocab, "vocab");
  require_positive(st.dp, "dp");
  require_positive(st.micro_batch, "micro-batch");
  require_positive(st.global_batch, "global-batch");
  if (st.bucket_mb <= 0) throw std::invalid_argument("bucket-mb must be positive");
  if (m.hidden % m.heads != 0)
    throw std::invalid_argument("heads (" + std::to_string(m.heads) +
                                ") must divide hidden (" + std::to_string(m.hidden) + ")");
  if (st.global_batch % (int64_t(st.dp) * st.micro_batch) != 0)
    throw std::invalid_argument("global-batch (" + std::to_string(st.global_batch) +
                                ") must be a multiple of dp * micro-batch (" +
                                std::to_string(st.dp) + " * " + std::to_string(st.micro_batch) +
                                ")");

  Job job;
  job.stream_names = {"compute", "dp_comm"};
  Communicator dp{"dp", {}};
  for (int r = 0; r < st.dp; ++r) dp.ranks.push_back(r);
  job.communicators.push_back(dp);

  auto program = std::make_shared<Program>();
  ProgramWriter w(job, *program);

  const DType dt = m.dtype;
  const double eb = dtype_bytes(dt);
  const int64_t b = st.micro_batch, s = m.seq_length, h = m.hidden, f = ffn_of(m), V = m.vocab;
  const int64_t T = b * s;  // tokens per micro-batch
  const int64_t micro_batches = st.global_batch / (int64_t(st.dp) * st.micro_batch);
  const double grad_bytes_per_param = dtype_bytes(st.grad_dtype);
  const double bucket_bytes = st.bucket_mb * 1024.0 * 1024.0;
  // Flash-style fused attention: 4 b s^2 h FLOPs forward, reads Q, K, V and writes the output.
  const double attn_flops = 4.0 * double(b) * double(s) * double(s) * double(h);
  const double attn_bytes = 4.0 * eb * double(T) * double(h);
  // Element-wise work per layer (two norms, bias-GeLU, dropouts, residual adds): about 18
  // activation-sized reads and writes forward, twice that backward.
  const double eltwise_bytes = 18.0 * eb * double(T) * double(h);
  const double eltwise_flops = 20.0 * double(T) * double(h);

  std::vector<OpId> reduces;
  for (int64_t mb = 0; mb < micro_batches; ++mb) {
    const std::string tag = micro_batches > 1 ? "mb" + std::to_string(mb) + "." : "";
    const bool last = mb + 1 == micro_batches;
    w.kernel(tag + "embedding.fwd", ComputePhase::Forward, dt, double(T) * double(h),
             3.0 * eb * double(T) * double(h));
    for (int64_t l = 0; l < m.layers; ++l) {
      const std::string L = tag + "layer" + std::to_string(l) + ".";
      w.kernel(L + "attn_norm.fwd", ComputePhase::Forward, dt, eltwise_flops / 4,
               eltwise_bytes / 4);
      w.gemm(L + "qkv.fwd", ComputePhase::Forward, dt, T, 3 * h, h);
      w.kernel(L + "attention.fwd", ComputePhase::Forward, dt, attn_flops, attn_bytes);
      w.gemm(L + "attn_proj.fwd", ComputePhase::Forward, dt, T, h, h);
      w.kernel(L + "mlp_norm.fwd", ComputePhase::Forward, dt, eltwise_flops / 4,
               eltwise_bytes / 4);
      w.gemm(L + "mlp_fc1.fwd", ComputePhase::Forward, dt, T, f, h);
      w.kernel(L + "mlp_act.fwd", ComputePhase::Forward, dt, eltwise_flops / 2,
               eltwise_bytes / 2);
      w.gemm(L + "mlp_fc2.fwd", ComputePhase::Forward, dt, T, h, f);
    }
    w.gemm(tag + "logits.fwd", ComputePhase::Forward, dt, T, V, h);
    w.kernel(tag + "loss.fwd", ComputePhase::Forward, dt, 5.0 * double(T) * double(V),
             2.0 * eb * double(T) * double(V));

    // Backward, last layer first. Gradients of a layer are ready after its weight-gradient
    // GEMMs; in the last micro-batch they fill buckets that are all-reduced on the
    // communication stream while the backward pass goes on.
    double bucket = 0.0;
    int bucket_index = 0;
    auto flush = [&](OpId ready) {
      if (!last || bucket <= 0.0) return;
      reduces.push_back(w.allreduce("grad_bucket" + std::to_string(bucket_index++) + ".allreduce",
                                    static_cast<uint64_t>(bucket), {ready}));
      bucket = 0.0;
    };
    w.kernel(tag + "loss.bwd", ComputePhase::BackwardInput, dt, 5.0 * double(T) * double(V),
             2.0 * eb * double(T) * double(V));
    w.gemm(tag + "logits.dgrad", ComputePhase::BackwardInput, dt, T, h, V);
    OpId ready = w.gemm(tag + "logits.wgrad", ComputePhase::BackwardWeight, dt, V, h, T);
    for (int64_t l = m.layers - 1; l >= 0; --l) {
      const std::string L = tag + "layer" + std::to_string(l) + ".";
      w.gemm(L + "mlp_fc2.dgrad", ComputePhase::BackwardInput, dt, T, f, h);
      w.gemm(L + "mlp_fc2.wgrad", ComputePhase::BackwardWeight, dt, h, f, T);
      w.kernel(L + "mlp_act.bwd", ComputePhase::BackwardInput, dt, eltwise_flops,
               eltwise_bytes);
      w.gemm(L + "mlp_fc1.dgrad", ComputePhase::BackwardInput, dt, T, h, f);
      w.gemm(L + "mlp_fc1.wgrad", ComputePhase::BackwardWeight, dt, f, h, T);
      w.kernel(L + "mlp_norm.bwd", ComputePhase::BackwardInput, dt, eltwise_flops / 2,
               eltwise_bytes / 2);
      w.gemm(L + "attn_proj.dgrad", ComputePhase::BackwardInput, dt, T, h, h);
      w.gemm(L + "attn_proj.wgrad", ComputePhase::BackwardWeight, dt, h, h, T);
      w.kernel(L + "attention.bwd", ComputePhase::BackwardInput, dt, 2.0 * attn_flops,
               2.0 * attn_bytes);
      w.gemm(L + "qkv.dgrad", ComputePhase::BackwardInput, dt, T, h, 3 * h);
      ready = w.gemm(L + "qkv.wgrad", ComputePhase::BackwardWeight, dt, 3 * h, h, T);
      w.kernel(L + "attn_norm.bwd", ComputePhase::BackwardInput, dt, eltwise_flops / 2,
               eltwise_bytes / 2);
      bucket += grad_bytes_per_param * double(layer_parameters(m));
      if (bucket >= bucket_bytes) flush(ready);
    }
    ready = w.kernel(tag + "embedding.bwd", ComputePhase::BackwardWeight, dt,
                     double(T) * double(h), 3.0 * eb * double(T) * double(h));
    bucket += grad_bytes_per_param * double(V * h + s * h + 2 * h);
    flush(ready);
  }

  // Adam with fp32 master weights: reads and writes weights, gradients, two moments.
  const double params = double(model_parameters(m));
  OpId adam = w.kernel("optimizer.adam", ComputePhase::Optimizer, DType::FP32, 12.0 * params,
                       32.0 * params);
  program->ops[adam].deps = reduces;

  for (int r = 0; r < st.dp; ++r) {
    Rank rank;
    rank.rank = r;
    rank.program = program;
    rank.communicators = {0};
    job.ranks.push_back(rank);
  }
  job.info.model = "gpt-l" + std::to_string(m.layers) + "-h" + std::to_string(h);
  job.info.global_batch = st.global_batch;
  job.info.seq_length = s;
  job.info.model_flops = iteration_model_flops(m, st.global_batch);
  job.info.hardware_flops = job.info.model_flops;
  return job;
}

}  // namespace tessera::workloads
