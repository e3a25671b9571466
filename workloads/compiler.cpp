#include "workloads/compiler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <unordered_map>

#include "workloads/errors.h"
#include "workloads/parallel_for.h"
#include "workloads/schedule.h"

namespace tessera::workloads {
namespace {

constexpr OpId kNoOp = std::numeric_limits<OpId>::max();

// Bytes of a stored element: fp8 training keeps activations and weights in 16 bits.
double storage_bytes(DType d) { return d == DType::FP8 ? 2.0 : double(dtype_bytes(d)); }

// Sizes of one micro-batch on one rank, named as in the papers (docs/workloads.md).
struct Geometry {
  double b, s, sl, T, Tr;  // micro-batch, seq, local seq (s/cp), local tokens, tokens in
                           // sequence-parallel regions (T/t with SP, else T)
  double h, a, d, g, dkv;  // hidden, heads, head dim, kv heads, kv width (g*d)
  double f, fe, mlp_in;    // ffn, expert ffn, 2 for SwiGLU (gate and up) else 1
  double V, t, c, E, El, k;  // padded vocab, tp, cp, experts, local experts, top-k
  double te, Te;           // TP of the vocabulary-parallel part (embedding, logits, loss) and
                           // the tokens one of its groups sees: T te / t
  double eb;               // activation/weight element bytes
  bool sp, dropout;
};

Geometry geometry(const ModelSpec& m, const ResolvedStrategy& r) {
  const Strategy& s = r.s;
  Geometry q{};
  q.b = double(s.micro_batch);
  q.s = double(m.seq_length);
  q.c = s.cp;
  q.t = s.tp;
  q.sl = q.s / q.c;
  q.T = q.b * q.sl;
  q.sp = s.sequence_parallel && s.tp > 1;
  q.Tr = q.sp ? q.T / q.t : q.T;
  q.te = r.embedding_tp;
  q.Te = q.T * q.te / q.t;
  q.eb = storage_bytes(s.dtype);
  q.dropout = m.dropout;
  if (m.is_generic()) return q;
  q.h = double(m.hidden);
  q.a = double(m.heads);
  q.d = double(m.head_dim());
  q.g = double(m.kv_heads_or_heads());
  q.dkv = q.g * q.d;
  q.f = double(m.ffn());
  q.fe = double(m.expert_ffn());
  q.mlp_in = m.mlp == MlpKind::SwiGLU ? 2.0 : 1.0;
  q.V = double(r.padded_vocab);
  q.E = double(m.experts);
  q.El = q.E / s.ep;
  q.k = double(m.top_k);
  return q;
}

double activation_bytes_of_layer(const ModelSpec& m, const ResolvedStrategy& r, bool moe,
                                 Recompute policy) {
  const Geometry q = geometry(m, r);
  const double R = q.Tr * q.h * q.eb;                 // a tensor in a replicated (or SP) region
  const double mask = q.dropout ? q.Tr * q.h : 0.0;   // 1-byte dropout mask
  if (policy == Recompute::Full) return R;            // only the layer's input is kept
  const bool flash = r.s.flash_attention;
  double bytes = 0;
  // Attention block: norm input, QKV input, Q, K, V, attention core, projection input, mask.
  bytes += 2 * R;
  bytes += q.T * (q.h + 2 * q.dkv) * q.eb / q.t;
  const double A = q.b * (q.a / q.t) * q.sl * q.s;    // attention-score elements
  if (flash) {
    bytes += q.b * (q.a / q.t) * q.sl * 4.0;          // log-sum-exp statistics, fp32
  } else if (policy != Recompute::Selective) {
    bytes += A * q.eb;                                // softmax output
    if (q.dropout) bytes += A * 1.0 + A * q.eb;       // dropout mask and output
  }
  bytes += q.T * q.h * q.eb / q.t + mask;
  // MLP block: norm input, MLP input, activation input, second GEMM input, mask.
  bytes += 2 * R + mask;
  if (moe) {
    const double routed = q.Tr * q.k;                 // token copies this rank's experts see
    bytes += q.Tr * q.E * 4.0;                        // router probabilities, fp32
    bytes += routed * q.h * q.eb;                     // permuted tokens (expert input)
    bytes += routed * (q.mlp_in + 1) * q.fe * q.eb;   // activation input, second GEMM input
  } else {
    bytes += q.T * (q.mlp_in + 1) * q.f * q.eb / q.t;
  }
  return bytes;
}

// Parameters whose gradients become ready together (a layer, the embedding, the output layer).
// Counts are per rank.
struct Unit {
  uint32_t name_unit = 0;   // index for op names
  int layer = -1;           // global layer index, -1 for embedding/output
  int generic_entry = -1;   // generic models: index into ModelSpec::generic_layers
  bool embedding = false;
  bool output = false;
  double dense = 0;         // parameters reduced over the dp group
  double expert = 0;        // parameters reduced over the expert-dp group
  double replicated = 0;    // of `dense`, those copied across TP (norms, row-parallel biases)
  double vocab = 0;         // of `dense`, the vocabulary-parallel matrix (V h / embedding tp)
  double activations = 0;   // saved per micro-batch
  double full_activations = 0;  // without recompute (materialized while recomputing)
  // Its parameter tensors (elements on this rank), for frameworks that gather each on its own:
  // reduced over dp (weights, biases, norms) and over the expert-dp group.
  std::vector<double> tensors, expert_tensors;
};

struct Bucket {
  double params = 0;
  size_t trigger = 0;       // index (in backward order) of the unit that completes it
  bool expert = false;
  std::vector<size_t> units;
};

struct Chunk {
  int virtual_stage = 0;
  std::vector<Unit> units;  // forward order
  std::vector<Bucket> buckets;
  double activations = 0;   // per micro-batch
};

// Rank layout: mixed-radix coordinates in the strategy's rank order.
struct Layout {
  std::array<int, 5> size{};    // indexed by Axis
  std::array<int, 5> stride{};  // indexed by Axis
  int world = 1;
  Layout(const ResolvedStrategy& r) {
    size[int(Axis::TP)] = r.s.tp;
    size[int(Axis::CP)] = r.s.cp;
    size[int(Axis::EP)] = r.s.ep;
    size[int(Axis::DP)] = r.edp;
    size[int(Axis::PP)] = r.s.pp;
    for (Axis a : r.s.rank_order) {
      stride[int(a)] = world;
      world *= size[int(a)];
    }
  }
  int coord(int rank, Axis a) const { return (rank / stride[int(a)]) % size[int(a)]; }
  int with(int rank, Axis a, int value) const {
    return rank + (value - coord(rank, a)) * stride[int(a)];
  }
  // Groups of the ranks that `member` accepts, by the rank key(rank) names; members in rank
  // order; group_of_rank is -1 for the others.
  template <typename Key, typename Member>
  std::vector<std::vector<int>> groups(Key key_of, Member member,
                                       std::vector<int>& group_of_rank) const {
    std::vector<std::vector<int>> out;
    std::vector<int> index(world, -1);
    group_of_rank.assign(world, -1);
    for (int r = 0; r < world; ++r) {
      if (!member(r)) continue;
      const int key = key_of(r);
      if (index[key] < 0) {
        index[key] = static_cast<int>(out.size());
        out.emplace_back();
      }
      out[index[key]].push_back(r);
      group_of_rank[r] = index[key];
    }
    return out;
  }
};

// Writes one pipeline stage's program; `job` holds the tables its op and stream names go in
// (the stage's own: see build_stage_programs).
class StageBuilder {
 public:
  StageBuilder(Job& job, Program& program, const ModelSpec& m, const ResolvedStrategy& r,
               const Framework& framework, const CommunicatorSlots& slots,
               const std::vector<std::string>& unit_names)
      : job_(job), prog_(program), m_(m), r_(r), framework_(framework), q_(geometry(m, r)),
        slots_(slots), unit_names_(unit_names) {}

  void build(int stage, const std::vector<Chunk>& chunks);

 private:
  // ---- primitives ----
  uint32_t stream(const char* name) { return job_.intern_stream(name); }
  // Interned "<unit>.<base>.<phase>" names, built once per (unit, base, phase).
  uint32_t name(uint32_t unit, const char* base, ComputePhase phase) {
    const uint64_t key = (uint64_t(unit) << 40) ^ (uint64_t(reinterpret_cast<uintptr_t>(base)) << 3) ^
                         uint64_t(phase);
    std::pair<uint64_t, uint32_t>& recent = recent_names_[(key * 0x9E3779B97F4A7C15ull) >> 58];
    if (recent.first == key) return recent.second;
    auto it = names_.find(key);
    if (it != names_.end()) {
      recent = *it;
      return it->second;
    }
    static const char* suffix[] = {"fwd", "bwd", "wgrad", "step", "recompute", ""};
    std::string text = unit_names_[unit] + "." + base;
    if (*suffix[int(phase)]) text += std::string(".") + suffix[int(phase)];
    const uint32_t id = job_.intern(text);
    names_.emplace(key, id);
    return id;
  }
  OpId push(Op&& op, DepList deps) {
    op.deps = std::move(deps);
    op.micro_batch = mb_;
    prog_.ops.push_back(std::move(op));
    return static_cast<OpId>(prog_.ops.size() - 1);
  }
  // A kernel of `kind`; `elements` is its main input's size (measured-kernel tables match on
  // it) and `kernels` how many kernels the framework launches for it.
  OpId compute(uint32_t name, ComputePhase phase, KernelKind kind, double flops, double bytes,
               double elements = 0, int kernels = 1) {
    Op op;
    op.kind = OpKind::Compute;
    op.stream = compute_stream_;
    op.name = name;
    op.phase = phase;
    op.dtype = r_.s.dtype;
    op.flops = flops;
    op.bytes = bytes;
    op.kernel = kind;
    op.kernels = static_cast<uint16_t>(kernels);
    op.elements = static_cast<int64_t>(elements);
    op.matmul = is_matmul(kind);
    last_compute_ = push(std::move(op), DepList(pending_.begin(), pending_.end()));
    pending_.clear();
    return last_compute_;
  }
  OpId gemm(uint32_t name, ComputePhase phase, double m, double n, double k, double batch = 1,
            KernelKind kind = KernelKind::Gemm) {
    const double eb = dtype_bytes(r_.s.dtype);
    const OpId id = compute(name, phase, kind, 2.0 * batch * m * n * k,
                            eb * batch * (m * k + k * n + m * n));
    prog_.ops[id].gemm = gemm_shape(name, m, n, k, batch);
    if (phase == ComputePhase::BackwardWeight && !framework_.fused_grad_accumulation)
      return accumulate_gradient(name, m * n * batch);
    return id;
  }
  GemmShape gemm_shape(uint32_t name, double m, double n, double k, double batch) const {
    constexpr double most = std::numeric_limits<int32_t>::max();
    if (m > most || n > most || k > most || batch > most)
      throw InputError("GEMM '" + job_.names[name] + "' would be " + std::to_string(int64_t(batch)) + " x " +
                       std::to_string(int64_t(m)) + " x " + std::to_string(int64_t(n)) + " x " +
                       std::to_string(int64_t(k)) + " (batch x m x n x k): a GEMM's dimensions go up to 2^31 - 1 "
                       "(fewer tokens per micro-batch: --micro-batch, seq_length; docs/limits.md)");
    return GemmShape{int32_t(m), int32_t(n), int32_t(k), int32_t(batch)};
  }
  // Without gradient-accumulation fusion the weight gradient lands in its own tensor and a
  // second kernel adds it to the main gradient (reads both, writes the main gradient).
  OpId accumulate_gradient(uint32_t gemm_name, double params) {
    const double gb = dtype_bytes(r_.s.grad_dtype);
    return compute(job_.intern(job_.names[gemm_name] + ".accumulate"), ComputePhase::BackwardWeight,
                   KernelKind::Elementwise, params, params * (q_.eb + 2.0 * gb), params);
  }
  // One batched GEMM of the attention core: (b a / t) products of m x n x k.
  OpId attention_gemm(uint32_t name, ComputePhase phase, double m, double n, double k) {
    return gemm(name, phase, m, n, k, q_.b * q_.a / q_.t, KernelKind::AttentionGemm);
  }
  // Element-wise kernels a framework may fuse: fused, one kernel moving `bytes`; unfused,
  // `unfused_kernels` kernels moving `unfused_bytes`.
  OpId fusible(uint32_t name, ComputePhase phase, KernelKind kind, bool fused, double flops,
               double elements, double bytes, int unfused_kernels, double unfused_bytes) {
    return fused ? compute(name, phase, kind, flops, bytes, elements)
                 : compute(name, phase, kind, flops, unfused_bytes, elements, unfused_kernels);
  }
  OpId collective(uint32_t strm, uint32_t name, ComputePhase phase, CollectiveKind kind,
                  double bytes, int slot, DepList deps) {
    Op op;
    op.kind = OpKind::Collective;
    op.stream = static_cast<uint16_t>(strm);
    op.name = name;
    op.phase = phase;
    op.collective = kind;
    op.message_bytes = static_cast<uint64_t>(std::llround(std::max(bytes, 1.0)));
    op.slot = slot;
    return push(std::move(op), std::move(deps));
  }
  DepList after_compute() const {
    return last_compute_ == kNoOp ? DepList{} : DepList{last_compute_};
  }
  void block(OpId id) { pending_.push_back(id); }

  // The activation of `elements` outputs, `flops_per` FLOPs and `tensors` tensors of that size
  // moved each: fused with the bias where the framework fuses it; unfused, a bias add (read and
  // write) comes first as its own kernel (models without biases have none).
  void activation(uint32_t name, ComputePhase phase, double flops_per, double elements,
                  double tensors) {
    const bool fused = framework_.fused_bias_activation || !m_.bias;
    fusible(name, phase, KernelKind::Activation, fused, flops_per * elements, elements,
            tensors * elements * q_.eb, 2, (tensors + 2) * elements * q_.eb);
  }
  // The residual add after a block (with the block's bias and dropout): Megatron's fused
  // bias-dropout-add reads the input and the residual and writes the sum (and the dropout
  // mask); unfused, the bias add, the dropout and the add are three kernels.
  void residual(uint32_t name, ComputePhase phase, double flops_per) {
    const double n = q_.Tr * q_.h, mask = q_.dropout ? n : 0.0;
    fusible(name, phase, KernelKind::Residual, framework_.fused_bias_dropout_add, flops_per * n, n,
            3.0 * n * q_.eb + mask, 3, 7.0 * n * q_.eb + mask);
  }

  // A layer norm's backward over `tokens` tokens: the output gradient and the input read, the
  // input gradient written; a second pass reads both again for the weight gradients where the
  // framework's kernel takes two (Framework::norm_backward_passes; Apex launches three kernels).
  void norm_backward(uint32_t name, double tokens) {
    const double n = tokens * q_.h, two = framework_.norm_backward_passes == 2 ? 1.0 : 0.0;
    compute(name, ComputePhase::BackwardInput, KernelKind::Norm, 8.0 * n, (3.0 + 2.0 * two) * n * q_.eb, n,
            two > 0 ? 3 : 1);
  }
  // A bias's gradient: the output gradient (`elements` of it) summed over the tokens, a
  // reduction kernel that reads it once. Models without biases have none.
  void bias_gradient(uint32_t name, double elements) {
    if (!m_.bias) return;
    compute(name, ComputePhase::BackwardWeight, KernelKind::Elementwise, elements, elements * q_.eb, elements);
  }
  // The bias of a linear layer added after its GEMM where the framework does not add it in the
  // GEMM (reads and writes the output).
  void gemm_bias(uint32_t name, ComputePhase phase, double elements) {
    if (!m_.bias || framework_.fused_gemm_bias) return;
    compute(name, phase, KernelKind::Bias, elements, 2.0 * elements * q_.eb, elements);
  }

  // ---- tensor-parallel GEMM pairs (Megatron's f and g operators) ----
  // A TP group as one part of the model sees it: its size, communicator slot and the tokens its
  // GEMMs take. The blocks: tp ranks on all T local tokens. The vocabulary-parallel part
  // (embedding, logits, loss): embedding.tp ranks on a slice of T embedding.tp / tp tokens.
  struct TpGroup {
    double size;
    int slot;
    double tokens;
  };
  TpGroup blocks() const { return {q_.t, slots_.tp, q_.T}; }
  TpGroup vocab() const { return {q_.te, slots_.embedding_tp, q_.Te}; }
  // A full activation of the group's tokens.
  double tp_bytes(const TpGroup& g) const { return g.tokens * q_.h * q_.eb; }

  // Column-parallel forward: with SP the sequence-sharded input is all-gathered first.
  void column_forward(uint32_t u, const char* base, const char* gather, ComputePhase ph,
                      double n, const TpGroup& g) {
    if (q_.sp && g.size > 1) gathered_gemm(u, base, gather, ph, g, n, q_.h);
    else gemm(name(u, base, ph), ph, g.tokens, n, q_.h);
  }
  // Row-parallel forward: the partial outputs are all-reduced (reduce-scattered with SP).
  void row_forward(uint32_t u, const char* base, const char* reduce, ComputePhase ph, double k) {
    const int chunks = overlap_chunks(blocks());
    const CollectiveKind kind = q_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    OpId last = kNoOp;
    for (int i = 0; i < chunks; ++i) {
      gemm(name(u, base, ph), ph, q_.T / chunks, q_.h, k);
      if (q_.t > 1)
        last = collective(tp_stream_, name(u, reduce, ph), ph, kind, tp_bytes(blocks()) / chunks,
                          slots_.tp, after_compute());
    }
    if (last != kNoOp) block(last);
  }
  // All-gathers the group's sequence shards (in chunks under TP overlap), then the GEMM on the
  // group's tokens.
  void gathered_gemm(uint32_t u, const char* base, const char* gather, ComputePhase ph,
                     const TpGroup& g, double n, double k) {
    const int chunks = overlap_chunks(g);
    std::vector<OpId> gathers;
    for (int i = 0; i < chunks; ++i)
      gathers.push_back(collective(tp_stream_, name(u, gather, ph), ph, CollectiveKind::AllGather,
                                   tp_bytes(g) / chunks, g.slot, after_compute()));
    for (int i = 0; i < chunks; ++i) {
      block(gathers[i]);
      gemm(name(u, base, ph), ph, g.tokens / chunks, n, k);
    }
  }
  int overlap_chunks(const TpGroup& g) const {
    return (g.size > 1 && r_.s.tp_comm_overlap) ? std::max(1, r_.s.tp_comm_chunks) : 1;
  }
  // Row-parallel backward: with SP the output gradient is all-gathered, then dgrad and wgrad.
  void row_backward(uint32_t u, const char* base, const char* gather, double k) {
    if (q_.sp) {
      gathered_gemm(u, base, gather, ComputePhase::BackwardInput, blocks(), k, q_.h);
    } else {
      gemm(name(u, base, ComputePhase::BackwardInput), ComputePhase::BackwardInput, q_.T, k, q_.h);
    }
    gemm(name(u, base, ComputePhase::BackwardWeight), ComputePhase::BackwardWeight, k, q_.h, q_.T);
  }
  // Column-parallel backward: dgrad, then the input gradient is summed into the blocks' layout
  // while wgrad runs; with SP the input is gathered again for wgrad (Megatron keeps only the
  // sharded input).
  // A layer's own bias (`bias`, null: none) gets its gradient after wgrad, while the input
  // gradient is still being summed, where the framework does not fuse it into wgrad.
  void column_backward(uint32_t u, const char* base, const char* gather, const char* reduce,
                       double n, const TpGroup& g, const char* bias = nullptr) {
    OpId input = kNoOp;
    if (q_.sp && g.size > 1)
      input = collective(tp_stream_, name(u, gather, ComputePhase::BackwardWeight),
                         ComputePhase::BackwardWeight, CollectiveKind::AllGather, tp_bytes(g),
                         g.slot, after_compute());
    gemm(name(u, base, ComputePhase::BackwardInput), ComputePhase::BackwardInput, g.tokens, q_.h, n);
    const OpId reduced = to_blocks(u, reduce, ComputePhase::BackwardInput, g);
    if (input != kNoOp) block(input);
    gemm(name(u, base, ComputePhase::BackwardWeight), ComputePhase::BackwardWeight, n, q_.h, g.tokens);
    if (bias != nullptr && !framework_.fused_gemm_bias_grad)
      bias_gradient(name(u, bias, ComputePhase::BackwardWeight), g.tokens * n);
    if (reduced != kNoOp) block(reduced);
  }
  // Partial sums over the group's shards (of an activation or an input gradient) into the
  // blocks' layout: T tokens on every TP rank, or sequence shards of T / t with SP. With the
  // blocks' group: one all-reduce over tp (reduce-scatter with SP). With a smaller vocabulary
  // group: a reduce-scatter inside the group leaves each rank its sequence shard of the group's
  // token slice (the SP layout, as the group's ranks are consecutive); without SP an all-gather
  // over tp rebuilds all T tokens. Returns the last collective (kNoOp: none).
  OpId to_blocks(uint32_t u, const char* reduce, ComputePhase ph, const TpGroup& g) {
    const CollectiveKind rs = CollectiveKind::ReduceScatter;
    if (g.size == q_.t)
      return q_.t > 1 ? collective(tp_stream_, name(u, reduce, ph), ph,
                                   q_.sp ? rs : CollectiveKind::AllReduce, tp_bytes(g), g.slot,
                                   after_compute())
                      : kNoOp;
    OpId last = kNoOp;
    if (g.size > 1)
      last = collective(tp_stream_, name(u, reduce, ph), ph, rs, tp_bytes(g), g.slot, after_compute());
    if (!q_.sp)
      last = collective(tp_stream_, name(u, "block_allgather", ph), ph, CollectiveKind::AllGather,
                        tp_bytes(blocks()), slots_.tp, after_compute());
    return last;
  }

  // ---- model pieces ----
  void layer_forward(const Unit& unit, ComputePhase ph);
  void layer_backward(const Unit& unit);
  void attention_core_forward(uint32_t u, ComputePhase ph);
  void embedding_forward(const Unit& unit);
  void embedding_backward(const Unit& unit);
  void output_forward(const Unit& unit);
  void output_backward(const Unit& unit);
  void generic_forward(const Unit& unit, ComputePhase ph);
  void generic_backward(const Unit& unit);
  void unit_forward(const Unit& unit, ComputePhase ph);
  void unit_backward(const Unit& unit);

  // ---- data parallelism ----
  int dp_slot(bool expert) const { return expert ? slots_.edp : slots_.dp; }
  bool dp_active(bool expert) const { return expert ? slots_.edp >= 0 : dp_size_ > 1; }
  void zero3_gather(const Unit& unit, ComputePhase ph);
  void framework_step(double local_params);

  // ---- pipeline transfers ----
  bool scatter_gather() const {
    return framework_.p2p_scatter_gather && q_.t > 1 && !q_.sp && !m_.is_generic();
  }
  OpId p2p(OpKind kind, int peer_slot, uint32_t tag, double bytes, uint32_t nm,
           DepList deps) {
    Op op;
    op.kind = kind;
    op.stream = static_cast<uint16_t>(kind == OpKind::Send ? send_stream_ : recv_stream_);
    op.name = nm;
    op.slot = peer_slot;
    op.tag = tag;
    op.message_bytes = static_cast<uint64_t>(std::llround(std::max(bytes, 1.0)));
    return push(std::move(op), std::move(deps));
  }
  // A stage boundary's tensor to a neighbour stage. Scatter-gather: each TP rank sends its
  // 1/t slice (the receivers all-gather it over TP). Synchronous: the next kernel waits until
  // the transfer is done (Megatron 2021's batch_isend_irecv, wait, cuda synchronize).
  void pipeline_send(int peer_slot, uint32_t tag, double bytes, uint32_t nm) {
    const OpId send = p2p(OpKind::Send, peer_slot, tag, scatter_gather() ? bytes / q_.t : bytes, nm,
                          after_compute());
    if (framework_.synchronous_p2p) block(send);
  }
  // Receives a boundary tensor before the next kernel. Synchronous frameworks post the receive
  // in program order (after the kernels before it), overlapped ones ahead of time.
  void pipeline_recv(int peer_slot, uint32_t tag, double bytes, uint32_t nm) {
    const OpId recv = p2p(OpKind::Recv, peer_slot, tag, scatter_gather() ? bytes / q_.t : bytes, nm,
                          framework_.synchronous_p2p ? after_compute() : DepList{});
    if (!scatter_gather()) return block(recv);
    block(collective(tp_stream_, job_.intern("pp.gather_slices"), ComputePhase::Other,
                     CollectiveKind::AllGather, bytes, slots_.tp, {recv}));
  }
  void zero3_reduce(const Unit& unit);
  DepList zero3_gather_deps(double params);
  void list_copies(uint32_t name, ComputePhase ph, double bytes, bool expert);
  void after_recompute(const Unit& unit) {
    if (r_.s.zero == 3 && framework_.zero3_regather_for_recompute) zero3_gather(unit, ComputePhase::BackwardInput);
  }
  // The tensors one collective moves each: the unit's parameters at once, or each tensor at
  // least the persistence threshold on its own.
  std::vector<double> zero3_pieces(const Unit& unit, bool expert) const;
  // Units whose parameters were gathered, in program order: the last compute op before each
  // gather and the parameters it gathered (the prefetch window).
  std::vector<std::pair<OpId, double>> gathered_;

  Job& job_;
  Program& prog_;
  const ModelSpec& m_;
  const ResolvedStrategy& r_;
  const Framework& framework_;
  const Geometry q_;
  const CommunicatorSlots& slots_;
  const std::vector<std::string>& unit_names_;
  std::unordered_map<uint64_t, uint32_t> names_;
  // A lookup per op, of a few hundred names used over and over: the last one found in each of
  // 64 slots is kept in front of the map. (No key is all ones: its low three bits are a phase.)
  std::array<std::pair<uint64_t, uint32_t>, 64> recent_names_ = filled_recent_names();
  static std::array<std::pair<uint64_t, uint32_t>, 64> filled_recent_names() {
    std::array<std::pair<uint64_t, uint32_t>, 64> a;
    a.fill({~uint64_t(0), 0});
    return a;
  }
  std::vector<OpId> pending_;
  OpId last_compute_ = kNoOp;
  int32_t mb_ = -1;
  uint16_t compute_stream_ = 0;
  uint32_t tp_stream_ = 0, cp_stream_ = 0, ep_stream_ = 0, dp_stream_ = 0, gather_stream_ = 0;
  uint32_t send_stream_ = 0, recv_stream_ = 0;
  int dp_size_ = 1;
  int edp_size_ = 1;

 public:
  void set_group_sizes(int dp, int edp) {
    dp_size_ = dp;
    edp_size_ = edp;
  }
};

void StageBuilder::attention_core_forward(uint32_t u, ComputePhase ph) {
  const Geometry& q = q_;
  const double A = q.b * (q.a / q.t) * q.sl * q.s;
  const double kv = q.T * q.c * q.dkv / q.t;  // K or V elements after the CP gather
  if (r_.s.flash_attention) {
    compute(name(u, "attention", ph), ph, KernelKind::FlashAttention,
            4.0 * q.b * q.sl * q.s * q.h / q.t, q.eb * (2.0 * q.T * q.h / q.t + 2.0 * kv));
    return;
  }
  // Per head: scores Q K^T (sl x s x d), probabilities times V (sl x d x s).
  attention_gemm(name(u, "attn_scores", ph), ph, q.sl, q.s, q.d);
  // Unfused: scale, masked fill and softmax, each reading and writing the scores.
  fusible(name(u, "softmax", ph), ph, KernelKind::Softmax, framework_.fused_softmax, 5.0 * A, A,
          2.0 * A * q.eb, 3, 6.0 * A * q.eb);
  if (q.dropout)
    compute(name(u, "attn_dropout", ph), ph, KernelKind::Dropout, 2.0 * A, 2.0 * A * q.eb + A, A);
  attention_gemm(name(u, "attn_values", ph), ph, q.sl, q.d, q.s);
}

void StageBuilder::layer_forward(const Unit& unit, ComputePhase ph) {
  const Geometry& q = q_;
  const uint32_t u = unit.name_unit;
  const bool moe = m_.is_moe();
  compute(name(u, "attn_norm", ph), ph, KernelKind::Norm, 5.0 * q.Tr * q.h, 2.0 * q.Tr * q.h * q.eb, q.Tr * q.h);
  column_forward(u, "qkv", "qkv_allgather", ph, (q.h + 2.0 * q.dkv) / q.t, blocks());
  gemm_bias(name(u, "qkv_bias", ph), ph, q.T * (q.h + 2.0 * q.dkv) / q.t);
  if (m_.position == PositionKind::Rotary)
    compute(name(u, "rope", ph), ph, KernelKind::Rotary, 3.0 * q.T * (q.h + q.dkv) / q.t,
            2.0 * q.T * (q.h + q.dkv) / q.t * q.eb, q.T * (q.h + q.dkv) / q.t);
  if (q.c > 1)
    block(collective(cp_stream_, name(u, "kv_allgather", ph), ph, CollectiveKind::AllGather,
                     2.0 * q.T * q.c * q.dkv / q.t * q.eb, slots_.cp, after_compute()));
  attention_core_forward(u, ph);
  row_forward(u, "attn_proj", "attn_proj_reduce", ph, q.h / q.t);
  residual(name(u, "attn_residual", ph), ph, 3.0);
  compute(name(u, "mlp_norm", ph), ph, KernelKind::Norm, 5.0 * q.Tr * q.h, 2.0 * q.Tr * q.h * q.eb, q.Tr * q.h);
  if (moe) {
    const double routed = q.Tr * q.k;
    gemm(name(u, "router", ph), ph, q.Tr, q.E, q.h);
    compute(name(u, "moe_permute", ph), ph, KernelKind::MoeRouting, 0.0, 2.0 * routed * q.h * q.eb, routed * q.h);
    if (slots_.ep >= 0)
      block(collective(ep_stream_, name(u, "moe_dispatch", ph), ph, CollectiveKind::AllToAll,
                       routed * q.h * q.eb, slots_.ep, after_compute()));
    gemm(name(u, "expert_fc1", ph), ph, routed, q.mlp_in * q.fe, q.h);
    activation(name(u, "expert_act", ph), ph, 8.0, routed * q.fe, q.mlp_in + 1);
    gemm(name(u, "expert_fc2", ph), ph, routed, q.h, q.fe);
    if (slots_.ep >= 0)
      block(collective(ep_stream_, name(u, "moe_combine", ph), ph, CollectiveKind::AllToAll,
                       routed * q.h * q.eb, slots_.ep, after_compute()));
    compute(name(u, "moe_unpermute", ph), ph, KernelKind::MoeRouting, routed * q.h, 2.0 * routed * q.h * q.eb, routed * q.h);
  } else {
    column_forward(u, "mlp_fc1", "mlp_fc1_allgather", ph, q.mlp_in * q.f / q.t, blocks());
    activation(name(u, "mlp_act", ph), ph, 8.0, q.T * q.f / q.t, q.mlp_in + 1);
    row_forward(u, "mlp_fc2", "mlp_fc2_reduce", ph, q.f / q.t);
  }
  residual(name(u, "mlp_residual", ph), ph, 3.0);
}

void StageBuilder::layer_backward(const Unit& unit) {
  const Geometry& q = q_;
  const uint32_t u = unit.name_unit;
  const ComputePhase bi = ComputePhase::BackwardInput, bw = ComputePhase::BackwardWeight;
  if (r_.s.recompute == Recompute::Full) {
    layer_forward(unit, ComputePhase::Recompute);
    after_recompute(unit);
  }
  residual(name(u, "mlp_residual", bi), bi, 2.0);
  bias_gradient(name(u, "mlp_fc2_bias", bw), q.Tr * q.h);
  if (m_.is_moe()) {
    const double routed = q.Tr * q.k;
    compute(name(u, "moe_unpermute", bi), bi, KernelKind::MoeRouting, routed * q.h, 2.0 * routed * q.h * q.eb, routed * q.h);
    if (slots_.ep >= 0)
      block(collective(ep_stream_, name(u, "moe_combine", bi), bi, CollectiveKind::AllToAll,
                       routed * q.h * q.eb, slots_.ep, after_compute()));
    gemm(name(u, "expert_fc2", bi), bi, routed, q.fe, q.h);
    gemm(name(u, "expert_fc2", bw), bw, q.fe, q.h, routed);
    activation(name(u, "expert_act", bi), bi, 16.0, routed * q.fe, q.mlp_in + 2);
    gemm(name(u, "expert_fc1", bi), bi, routed, q.h, q.mlp_in * q.fe);
    gemm(name(u, "expert_fc1", bw), bw, q.mlp_in * q.fe, q.h, routed);
    if (slots_.ep >= 0)
      block(collective(ep_stream_, name(u, "moe_dispatch", bi), bi, CollectiveKind::AllToAll,
                       routed * q.h * q.eb, slots_.ep, after_compute()));
    compute(name(u, "moe_permute", bi), bi, KernelKind::MoeRouting, 0.0, 2.0 * routed * q.h * q.eb, routed * q.h);
    gemm(name(u, "router", bi), bi, q.Tr, q.h, q.E);
    gemm(name(u, "router", bw), bw, q.E, q.h, q.Tr);
  } else {
    row_backward(u, "mlp_fc2", "mlp_fc2_grad_allgather", q.f / q.t);
    activation(name(u, "mlp_act", bi), bi, 16.0, q.T * q.f / q.t, q.mlp_in + 2);
    bias_gradient(name(u, "mlp_fc1_bias", bw), q.T * q.mlp_in * q.f / q.t);
    column_backward(u, "mlp_fc1", "mlp_fc1_allgather", "mlp_fc1_grad_reduce",
                    q.mlp_in * q.f / q.t, blocks());
  }
  norm_backward(name(u, "mlp_norm", bi), q.Tr);
  residual(name(u, "attn_residual", bi), bi, 2.0);
  bias_gradient(name(u, "attn_proj_bias", bw), q.Tr * q.h);
  row_backward(u, "attn_proj", "attn_proj_grad_allgather", q.h / q.t);
  // Selective recompute re-runs the attention core's forward (the s^2 part) before its backward.
  if (r_.s.recompute == Recompute::Selective && !r_.s.flash_attention)
    attention_core_forward(u, ComputePhase::Recompute);
  const double kv_bytes = 2.0 * q.T * q.c * q.dkv / q.t * q.eb;
  if (q.c > 1)
    block(collective(cp_stream_, name(u, "kv_allgather", bi), bi, CollectiveKind::AllGather,
                     kv_bytes, slots_.cp, after_compute()));
  const double A = q.b * (q.a / q.t) * q.sl * q.s;
  const double kv = q.T * q.c * q.dkv / q.t;
  if (r_.s.flash_attention) {
    compute(name(u, "attention", bi), bi, KernelKind::FlashAttention,
            8.0 * q.b * q.sl * q.s * q.h / q.t, q.eb * (4.0 * q.T * q.h / q.t + 4.0 * kv));
  } else {
    // The gradients of the probabilities (dO V^T) and of V (P^T dO), then of the scores'
    // operands: dQ = dS K and dK = dS^T Q.
    attention_gemm(name(u, "attn_values", bi), bi, q.sl, q.s, q.d);
    attention_gemm(name(u, "attn_values", ComputePhase::BackwardWeight), bi, q.s, q.d, q.sl);
    if (q.dropout)
      compute(name(u, "attn_dropout", bi), bi, KernelKind::Dropout, 2.0 * A, 2.0 * A * q.eb + A, A);
    fusible(name(u, "softmax", bi), bi, KernelKind::Softmax, framework_.fused_softmax, 4.0 * A, A,
            3.0 * A * q.eb, 3, 7.0 * A * q.eb);
    attention_gemm(name(u, "attn_scores", bi), bi, q.sl, q.d, q.s);
    attention_gemm(name(u, "attn_scores", ComputePhase::BackwardWeight), bi, q.s, q.d, q.sl);
  }
  if (q.c > 1)
    block(collective(cp_stream_, name(u, "kv_grad_reducescatter", bi), bi,
                     CollectiveKind::ReduceScatter, kv_bytes, slots_.cp, after_compute()));
  if (m_.position == PositionKind::Rotary)
    compute(name(u, "rope", bi), bi, KernelKind::Rotary, 3.0 * q.T * (q.h + q.dkv) / q.t,
            2.0 * q.T * (q.h + q.dkv) / q.t * q.eb, q.T * (q.h + q.dkv) / q.t);
  column_backward(u, "qkv", "qkv_allgather", "qkv_grad_reduce", (q.h + 2.0 * q.dkv) / q.t,
                  blocks(), "qkv_bias");
  norm_backward(name(u, "attn_norm", bi), q.Tr);
}

// The vocabulary-parallel part (docs/workloads.md): with embedding.tp = e < tp = t, each TP
// group runs it as t / e groups of e ranks (vocab()), each on its slice of Te = T e / t tokens;
// with e = t that is the blocks' TP group on all T tokens.
void StageBuilder::embedding_forward(const Unit& unit) {
  const Geometry& q = q_;
  const ComputePhase f = ComputePhase::Forward;
  const uint32_t u = unit.name_unit;
  // Vocabulary-parallel lookup: each rank fills the rows of its vocabulary shard for its group's
  // tokens, then the partial embeddings are summed into the blocks' layout.
  compute(name(u, "lookup", f), f, KernelKind::Embedding, q.Te * q.h, 3.0 * q.Te * q.h * q.eb, q.Te * q.h);
  const OpId summed = to_blocks(u, "embedding_reduce", f, vocab());
  if (summed != kNoOp) block(summed);
  if (q.dropout)
    compute(name(u, "dropout", f), f, KernelKind::Dropout, 2.0 * q.Tr * q.h, 2.0 * q.Tr * q.h * q.eb + q.Tr * q.h, q.Tr * q.h);
}

void StageBuilder::embedding_backward(const Unit& unit) {
  const Geometry& q = q_;
  const ComputePhase bi = ComputePhase::BackwardInput, bw = ComputePhase::BackwardWeight;
  const uint32_t u = unit.name_unit;
  if (q.dropout)
    compute(name(u, "dropout", bi), bi, KernelKind::Dropout, 2.0 * q.Tr * q.h, 2.0 * q.Tr * q.h * q.eb + q.Tr * q.h, q.Tr * q.h);
  // With SP the output gradient is sequence-sharded: the group gathers its token slice.
  if (q.sp && q.te > 1)
    block(collective(tp_stream_, name(u, "embedding_grad_allgather", bi), bi,
                     CollectiveKind::AllGather, tp_bytes(vocab()), slots_.embedding_tp,
                     after_compute()));
  compute(name(u, "lookup", bw), bw, KernelKind::Embedding, q.Te * q.h, 3.0 * q.Te * q.h * q.eb, q.Te * q.h);
}

void StageBuilder::output_forward(const Unit& unit) {
  const Geometry& q = q_;
  const ComputePhase f = ComputePhase::Forward;
  const uint32_t u = unit.name_unit;
  const double local_vocab = q.V / q.te;
  compute(name(u, "final_norm", f), f, KernelKind::Norm, 5.0 * q.Tr * q.h, 2.0 * q.Tr * q.h * q.eb, q.Tr * q.h);
  column_forward(u, "logits", "logits_allgather", f, local_vocab, vocab());
  // Vocabulary-parallel cross-entropy: max, target logit and sum of exponentials are
  // all-reduced across the group (three fp32 values per token).
  compute(name(u, "cross_entropy", f), f, KernelKind::CrossEntropy, 5.0 * q.Te * local_vocab,
          q.Te * local_vocab * (q.eb + 4.0), q.Te * local_vocab);
  if (q.te > 1)
    block(collective(tp_stream_, name(u, "loss_allreduce", f), f, CollectiveKind::AllReduce,
                     12.0 * q.Te, slots_.embedding_tp, after_compute()));
}

void StageBuilder::output_backward(const Unit& unit) {
  const Geometry& q = q_;
  const ComputePhase bi = ComputePhase::BackwardInput;
  const uint32_t u = unit.name_unit;
  const double local_vocab = q.V / q.te;
  compute(name(u, "cross_entropy", bi), bi, KernelKind::CrossEntropy, 2.0 * q.Te * local_vocab,
          q.Te * local_vocab * (q.eb + 4.0), q.Te * local_vocab);
  column_backward(u, "logits", "logits_allgather", "logits_grad_reduce", local_vocab, vocab());
  norm_backward(name(u, "final_norm", bi), q.Tr);
}

// Generic layers: sizes per sample, so each is scaled by the micro-batch.
void StageBuilder::generic_forward(const Unit& unit, ComputePhase ph) {
  const GenericLayer& l = m_.generic_layers[unit.generic_entry];
  const uint32_t u = unit.name_unit;
  const double b = q_.b;
  if (l.kind == GenericLayer::Kind::Gemm) {
    gemm(name(u, "gemm", ph), ph, b * l.m, l.n, l.k);
  } else {
    const bool custom = l.kind == GenericLayer::Kind::Custom;
    compute(name(u, custom ? "op" : "elementwise", ph), ph,
            custom ? KernelKind::Gemm : KernelKind::Elementwise, b * l.forward_flops, b * l.bytes);
  }
}

void StageBuilder::generic_backward(const Unit& unit) {
  const GenericLayer& l = m_.generic_layers[unit.generic_entry];
  const uint32_t u = unit.name_unit;
  const double b = q_.b;
  const ComputePhase bi = ComputePhase::BackwardInput, bw = ComputePhase::BackwardWeight;
  if (r_.s.recompute == Recompute::Full) {
    generic_forward(unit, ComputePhase::Recompute);
    after_recompute(unit);
  }
  if (l.kind == GenericLayer::Kind::Gemm) {
    gemm(name(u, "gemm", bi), bi, b * l.m, l.k, l.n);
    gemm(name(u, "gemm", bw), bw, l.k, l.n, b * l.m);
  } else {
    const double flops = l.backward_flops >= 0 ? l.backward_flops : 2.0 * l.forward_flops;
    const bool custom = l.kind == GenericLayer::Kind::Custom;
    compute(name(u, custom ? "op" : "elementwise", bi), bi,
            custom ? KernelKind::Gemm : KernelKind::Elementwise, b * flops, 2.0 * b * l.bytes);
  }
}

// What the framework does with the reduced gradients before the optimizer step: with fp16 and
// dynamic loss scaling, unscale them and check for inf/NaN (read and write every local
// gradient); with clipping, their norm (read every local gradient once).
void StageBuilder::framework_step(double local_params) {
  const double gb = dtype_bytes(r_.s.grad_dtype);
  if (framework_.loss_scaling && r_.s.dtype == DType::FP16)
    compute(job_.intern("optimizer.unscale_and_check"), ComputePhase::Optimizer,
            KernelKind::Framework, local_params, 2.0 * gb * local_params, local_params);
  if (framework_.gradient_clipping)
    compute(job_.intern("optimizer.grad_norm"), ComputePhase::Optimizer, KernelKind::Framework,
            2.0 * local_params, gb * local_params, local_params);
}

std::vector<double> StageBuilder::zero3_pieces(const Unit& unit, bool expert) const {
  const double params = expert ? unit.expert : unit.dense;
  if (framework_.zero3_fetch != "tensor") return {params};
  std::vector<double> pieces;
  for (double t : expert ? unit.expert_tensors : unit.tensors)
    if (t > 0 && t >= framework_.zero3_persistence_threshold) pieces.push_back(t);
  return pieces;
}

// What a unit's parameter gather waits for. Without overlap (or a unit larger than the
// prefetch limit) the compute before it; with limits, the compute before the earliest unit
// such that the units gathered ahead of the running compute stay within them (elements and
// units).
DepList StageBuilder::zero3_gather_deps(double params) {
  const double limit = framework_.zero3_prefetch_elements;
  const int units = framework_.zero3_prefetch_units;
  DepList deps;
  if (!r_.s.overlap_param_gather || (limit >= 0 && params > limit) || units == 0) {
    deps = after_compute();
  } else if (limit >= 0 || units > 0) {
    double ahead = params;
    OpId gate = last_compute_;
    for (size_t i = gathered_.size(), walked = 0; i-- > 0; ++walked) {
      if ((limit >= 0 && ahead + gathered_[i].second > limit) || (units > 0 && int(walked) >= units)) break;
      ahead += gathered_[i].second;
      gate = gathered_[i].first;
    }
    if (gate != kNoOp) deps = DepList{gate};
  }
  gathered_.emplace_back(last_compute_, params);
  return deps;
}

// PyTorch's all-gather and reduce-scatter over tensor lists copy each of the members' list
// entries between the list and a flat buffer: one copy kernel per member, `bytes` read and
// written in all.
void StageBuilder::list_copies(uint32_t nm, ComputePhase ph, double bytes, bool expert) {
  if (!framework_.collective_tensor_lists) return;
  const int members = std::min(expert ? edp_size_ : dp_size_, int(std::numeric_limits<uint16_t>::max()));
  compute(nm, ph, KernelKind::Elementwise, 0.0, 2.0 * bytes, bytes / q_.eb, members);
}

void StageBuilder::zero3_gather(const Unit& unit, ComputePhase ph) {
  for (bool expert : {false, true}) {
    const double params = expert ? unit.expert : unit.dense;
    if (params <= 0 || !dp_active(expert)) continue;
    const uint32_t u = unit.name_unit;
    const DepList deps = zero3_gather_deps(params);
    for (double piece : zero3_pieces(unit, expert)) {
      const OpId g = collective(gather_stream_, name(u, expert ? "expert_param_allgather" : "param_allgather", ph), ph,
                                CollectiveKind::AllGather, piece * q_.eb, dp_slot(expert), deps);
      block(g);
      list_copies(name(u, "param_allgather_copies", ph), ph, piece * q_.eb, expert);
    }
  }
}

void StageBuilder::zero3_reduce(const Unit& unit) {
  const double gb = dtype_bytes(r_.s.grad_dtype);
  const ComputePhase bw = ComputePhase::BackwardWeight;
  for (bool expert : {false, true}) {
    const double params = expert ? unit.expert : unit.dense;
    if (params <= 0 || !dp_active(expert)) continue;
    const uint32_t u = unit.name_unit;
    for (double piece : zero3_pieces(unit, expert)) {
      list_copies(name(u, "grad_reducescatter_copies", bw), bw, piece * gb, expert);
      collective(dp_stream_, name(u, expert ? "expert_grad_reducescatter" : "grad_reducescatter", bw), bw,
                 CollectiveKind::ReduceScatter, piece * gb, dp_slot(expert), after_compute());
    }
  }
}

void StageBuilder::unit_forward(const Unit& unit, ComputePhase ph) {
  if (r_.s.zero == 3) zero3_gather(unit, ph);
  if (m_.is_generic()) return generic_forward(unit, ph);
  if (unit.embedding) return embedding_forward(unit);
  if (unit.output) return output_forward(unit);
  layer_forward(unit, ph);
}

void StageBuilder::unit_backward(const Unit& unit) {
  const bool regather = framework_.zero3_regather_for_recompute && r_.s.recompute == Recompute::Full &&
                        !unit.embedding && !unit.output;
  if (r_.s.zero == 3) zero3_gather(unit, regather ? ComputePhase::Recompute : ComputePhase::BackwardInput);
  if (m_.is_generic()) generic_backward(unit);
  else if (unit.embedding) embedding_backward(unit);
  else if (unit.output) output_backward(unit);
  else layer_backward(unit);
  if (r_.s.zero == 3 && framework_.zero3_grad_reduction == "fetch") zero3_reduce(unit);
}


// Pipeline tags: one per (micro-batch, receiving virtual stage, direction), so a receive
// matches exactly one send.
uint32_t p2p_tag(int64_t mb, int virtual_stages, int receiver_vs, bool forward) {
  return static_cast<uint32_t>((mb * virtual_stages + receiver_vs) * 2 + (forward ? 0 : 1));
}

void StageBuilder::build(int stage, const std::vector<Chunk>& chunks) {
  const Strategy& s = r_.s;
  compute_stream_ = static_cast<uint16_t>(stream("compute"));
  if (slots_.tp >= 0) tp_stream_ = stream("tp_comm");
  if (slots_.cp >= 0) cp_stream_ = stream("cp_comm");
  if (slots_.ep >= 0) ep_stream_ = stream("ep_comm");
  dp_stream_ = stream("dp_comm");
  if (s.zero >= 1) gather_stream_ = stream("dp_gather");
  if (s.pp > 1) {
    send_stream_ = stream("pp_send");
    recv_stream_ = stream("pp_recv");
  }
  const int VS = r_.virtual_stages;
  const double p2p_bytes =
      m_.is_generic() ? 0.0 : q_.T * q_.h * q_.eb / (q_.sp ? q_.t : 1.0);
  auto boundary_bytes = [&](const Chunk& chunk, bool last_unit) {
    if (!m_.is_generic()) return p2p_bytes;
    // Generic models: the tensor at the boundary is the output of the chunk's last layer
    // (forward) or the gradient of its first layer's input (backward).
    const Unit& u = last_unit ? chunk.units.back() : chunk.units.front();
    const GenericLayer& l = m_.generic_layers[u.generic_entry];
    double per_sample = l.kind == GenericLayer::Kind::Gemm ? double(l.m) * (last_unit ? l.n : l.k) * q_.eb
                                                          : std::max(l.activation_bytes, 0.0);
    return std::max(1.0, q_.b * per_sample);
  };
  const uint32_t send_act = job_.intern("pp.send_activation"), recv_act = job_.intern("pp.recv_activation");
  const uint32_t send_grad = job_.intern("pp.send_grad"), recv_grad = job_.intern("pp.recv_grad");

  std::vector<OpId> reductions;  // everything the optimizer waits for
  const bool bucketed = s.zero < 3 || framework_.zero3_grad_reduction != "fetch";
  const bool allreduce = s.zero == 0 || (s.zero == 3 && framework_.zero3_grad_reduction == "allreduce_buckets");
  const double gb = dtype_bytes(s.grad_dtype);
  auto reduce_bucket = [&](const Bucket& bucket, size_t index) {
    if (!dp_active(bucket.expert)) return;
    const uint32_t nm = job_.intern("grad_bucket" + std::to_string(index) +
                                    (bucket.expert ? ".expert" : "") +
                                    (allreduce ? ".allreduce" : ".reducescatter"));
    reductions.push_back(collective(dp_stream_, nm, ComputePhase::BackwardWeight,
                                    allreduce ? CollectiveKind::AllReduce : CollectiveKind::ReduceScatter,
                                    bucket.params * gb, dp_slot(bucket.expert), after_compute()));
  };
  auto gather_bucket = [&](const Bucket& bucket, size_t index, DepList deps) {
    const uint32_t nm = job_.intern("param_bucket" + std::to_string(index) +
                                    (bucket.expert ? ".expert" : "") + ".allgather");
    return collective(gather_stream_, nm, ComputePhase::Optimizer, CollectiveKind::AllGather,
                      bucket.params * q_.eb, dp_slot(bucket.expert), std::move(deps));
  };
  // Global bucket numbering across the stage's chunks, for names.
  std::vector<size_t> first_bucket(chunks.size(), 0);
  for (size_t c = 1; c < chunks.size(); ++c)
    first_bucket[c] = first_bucket[c - 1] + chunks[c - 1].buckets.size();

  // ZeRO-1/2 with overlapped parameter gather: the gathers of the updated parameters (the
  // previous step's) run at the start and each layer's first forward waits for its bucket.
  std::vector<std::vector<OpId>> unit_gather(chunks.size());
  const bool early_gather = s.zero >= 1 && s.zero <= 2 && s.overlap_param_gather;
  if (early_gather) {
    for (size_t c = 0; c < chunks.size(); ++c) {
      unit_gather[c].assign(chunks[c].units.size(), kNoOp);
      const size_t n = chunks[c].units.size();
      for (size_t bi = chunks[c].buckets.size(); bi-- > 0;) {
        const Bucket& bucket = chunks[c].buckets[bi];
        if (!dp_active(bucket.expert)) continue;
        const OpId g = gather_bucket(bucket, first_bucket[c] + bi, {});
        for (size_t back : bucket.units) {
          OpId& slot = unit_gather[c][n - 1 - back];
          if (slot == kNoOp) slot = g;
          else block(g);  // a unit in two buckets (dense and expert) waits for both
        }
      }
    }
  }

  const std::vector<PipelineStep> steps =
      pipeline_schedule(s.schedule, s.pp, stage, r_.micro_batches, s.vpp,
                        s.extra_warmup.empty() ? 0 : s.extra_warmup[size_t(stage)]);
  std::vector<int64_t> forwards(chunks.size(), 0), backwards(chunks.size(), 0);
  std::vector<std::pair<const Bucket*, size_t>> deferred;
  for (const PipelineStep& step : steps) {
    const Chunk& chunk = chunks[step.chunk];
    const int vs = chunk.virtual_stage;
    mb_ = step.micro_batch;
    if (step.forward) {
      const bool first_use = forwards[step.chunk]++ == 0;
      if (vs > 0)
        pipeline_recv(kPrevStagePeer, p2p_tag(mb_, VS, vs, true),
                      boundary_bytes(chunks[step.chunk], false), recv_act);
      for (size_t i = 0; i < chunk.units.size(); ++i) {
        if (first_use && early_gather && unit_gather[step.chunk][i] != kNoOp)
          block(unit_gather[step.chunk][i]);
        unit_forward(chunk.units[i], ComputePhase::Forward);
      }
      if (vs < VS - 1)
        pipeline_send(kNextStagePeer, p2p_tag(mb_, VS, vs + 1, true), boundary_bytes(chunk, true),
                      send_act);
    } else {
      const bool final_pass = ++backwards[step.chunk] == r_.micro_batches;
      if (vs < VS - 1)
        pipeline_recv(kNextStagePeer, p2p_tag(mb_, VS, vs, false), boundary_bytes(chunk, true),
                      recv_grad);
      const size_t n = chunk.units.size();
      for (size_t back = 0; back < n; ++back) {
        unit_backward(chunk.units[n - 1 - back]);
        if (!final_pass || !bucketed) continue;
        // Gradients of this unit are final: reduce every bucket it completes.
        for (size_t bi = 0; bi < chunk.buckets.size(); ++bi) {
          if (chunk.buckets[bi].trigger != back) continue;
          if (s.overlap_grad_reduce) reduce_bucket(chunk.buckets[bi], first_bucket[step.chunk] + bi);
          else deferred.emplace_back(&chunk.buckets[bi], first_bucket[step.chunk] + bi);
        }
      }
      if (vs > 0)
        pipeline_send(kPrevStagePeer, p2p_tag(mb_, VS, vs - 1, false), boundary_bytes(chunk, false),
                      send_grad);
    }
  }
  mb_ = -1;
  for (const auto& [bucket, index] : deferred) reduce_bucket(*bucket, index);
  if (s.zero == 3 && !bucketed)  // the per-layer reduce-scatters are what the optimizer waits for
    for (OpId i = 0; i < prog_.ops.size(); ++i)
      if (prog_.ops[i].kind == OpKind::Collective && prog_.ops[i].collective == CollectiveKind::ReduceScatter &&
          prog_.ops[i].stream == dp_stream_)
        reductions.push_back(i);

  // Weights copied across TP (norms, row-parallel biases, the router) saw different tokens
  // under sequence parallelism: their gradients are all-reduced over TP.
  double replicated = 0, embedding_params = 0, vocab_params = 0;
  for (const Chunk& c : chunks)
    for (const Unit& u : c.units) {
      replicated += u.replicated;
      vocab_params += u.vocab;
      if ((u.embedding || u.output) && slots_.embedding >= 0)
        embedding_params = q_.V * q_.h / q_.te;
    }
  if (q_.sp && replicated > 0)
    reductions.push_back(collective(tp_stream_, job_.intern("sequence_parallel_grads.allreduce"),
                                    ComputePhase::BackwardWeight, CollectiveKind::AllReduce,
                                    replicated * gb, slots_.tp, after_compute()));
  // Tied embeddings on different stages: the two copies' gradients are summed.
  if (embedding_params > 0)
    reductions.push_back(collective(dp_stream_, job_.intern("embedding_grads.allreduce"),
                                    ComputePhase::BackwardWeight, CollectiveKind::AllReduce,
                                    embedding_params * gb, slots_.embedding, after_compute()));
  // embedding.tp < tp: the tp / embedding.tp groups of a TP group hold copies of the vocabulary
  // shards and saw different tokens: each shard's gradient (the rank's ZeRO shard of it) is
  // summed over its copies. Sums commute, so this may follow the dp reduction.
  if (slots_.embedding_replica >= 0 && vocab_params > 0)
    reductions.push_back(collective(
        dp_stream_, job_.intern("embedding_replica_grads.allreduce"), ComputePhase::BackwardWeight,
        CollectiveKind::AllReduce, vocab_params * gb / (s.zero >= 1 ? dp_size_ : 1),
        slots_.embedding_replica, after_compute()));

  // Adam: fp32 master weights, two moments; reads and writes all three, reads the gradient,
  // writes the compute-dtype weight (about 32 bytes and 12 FLOPs per parameter).
  double local = 0;
  for (const Chunk& c : chunks)
    for (const Unit& u : c.units)
      local += u.dense / (s.zero >= 1 ? dp_size_ : 1) + u.expert / (s.zero >= 1 ? edp_size_ : 1);
  pending_.insert(pending_.end(), reductions.begin(), reductions.end());
  framework_step(local);
  const OpId step_op = compute(job_.intern("optimizer.adam"), ComputePhase::Optimizer,
                               KernelKind::Optimizer, 12.0 * local, 32.0 * local, local);
  prog_.ops[step_op].dtype = DType::FP32;
  if (s.zero >= 1 && s.zero <= 2 && !early_gather)
    for (size_t c = 0; c < chunks.size(); ++c)
      for (size_t bi = chunks[c].buckets.size(); bi-- > 0;)
        if (dp_active(chunks[c].buckets[bi].expert))
          gather_bucket(chunks[c].buckets[bi], first_bucket[c] + bi, {step_op});
}

}  // namespace

double layer_activation_bytes(const ModelSpec& model, const ResolvedStrategy& strategy, bool moe) {
  return activation_bytes_of_layer(model, strategy, moe, strategy.s.recompute);
}

// The job's communicators, family by family. A family is one communicator per group of ranks
// with the same key (the rank with the family's coordinates zeroed). The vocabulary families
// (tied embedding, embedding TP and its replicas) hold only the first and last stage's ranks;
// they come after the families of every rank, so a slot means the same family on every rank
// that uses it.
struct Families {
  CommunicatorSlots slots;
  std::vector<std::vector<int>> slot_of_rank;  // per family: communicator of each rank, or -1
};

Families make_communicators(const ModelSpec& m, const ResolvedStrategy& r, const Layout& layout,
                            Job& job) {
  const Strategy& s = r.s;
  Families f;
  std::vector<std::vector<int>>& slot_of_rank = f.slot_of_rank;
  CommunicatorSlots& slots = f.slots;
  auto add_family = [&](const char* name, bool wanted, auto key_of, auto member) {
    if (!wanted) return -1;
    std::vector<int> group_of_rank;
    const auto groups = layout.groups(key_of, member, group_of_rank);
    if (groups.front().size() < 2 && std::string(name) != "dp") return -1;
    const int base = static_cast<int>(job.communicators.size());
    for (const auto& g : groups) job.communicators.push_back(Communicator{name, g});
    for (int& gi : group_of_rank)
      if (gi >= 0) gi += base;
    slot_of_rank.push_back(std::move(group_of_rank));
    return static_cast<int>(slot_of_rank.size() - 1);
  };
  auto along = [&layout](std::vector<Axis> axes) {
    return [&layout, axes](int rank) {
      for (Axis a : axes) rank = layout.with(rank, a, 0);
      return rank;
    };
  };
  const auto every_rank = [](int) { return true; };
  slots.dp = add_family("dp", true, along({Axis::DP, Axis::EP, Axis::CP}), every_rank);
  // Megatron-LM batches each step's pipeline sends and receives on the pipeline group.
  if (s.pp > 1) job.p2p_ranks = s.pp;
  slots.tp = add_family("tp", s.tp > 1, along({Axis::TP}), every_rank);
  slots.cp = add_family("cp", s.cp > 1, along({Axis::CP}), every_rank);
  slots.ep = add_family("ep", s.ep > 1, along({Axis::EP}), every_rank);
  slots.edp = add_family("edp", m.is_moe(), along({Axis::DP, Axis::CP, Axis::TP}), every_rank);
  const auto vocabulary_stage = [&](int rank) {
    const int stage = layout.coord(rank, Axis::PP);
    return stage == 0 || stage == s.pp - 1;
  };
  // Tied embeddings split over the pipeline: the first and last stage's copies.
  slots.embedding = add_family("embedding", m.tied_embeddings && !m.is_generic() && s.pp > 1,
                               along({Axis::PP}), vocabulary_stage);
  // The embedding's own TP (embedding.tp = e dividing tp = t): the TP group splits into t / e
  // groups of e consecutive TP ranks (embedding_tp); ranks at the same place in those groups
  // hold the same vocabulary shard (embedding_replica) and sum its gradients.
  const int e = r.embedding_tp;
  if (!m.is_generic() && e == s.tp) {
    slots.embedding_tp = slots.tp;
  } else if (!m.is_generic()) {
    const auto tp_of = [&layout](int rank) { return layout.coord(rank, Axis::TP); };
    slots.embedding_tp = add_family(
        "embedding_tp", e > 1,
        [&](int rank) { return layout.with(rank, Axis::TP, tp_of(rank) / e * e); }, vocabulary_stage);
    slots.embedding_replica = add_family(
        "embedding_replica", true,
        [&](int rank) { return layout.with(rank, Axis::TP, tp_of(rank) % e); }, vocabulary_stage);
  }
  return f;
}

// Gradient buckets of a chunk: they fill in backward order, as gradients become ready, and
// close at bucket_params parameters (dense and expert parameters apart).
void fill_buckets(Chunk& chunk, double bucket_params) {
  for (bool expert : {false, true}) {
    Bucket open;
    open.expert = expert;
    const size_t n = chunk.units.size();
    for (size_t back = 0; back < n; ++back) {
      const double p = expert ? chunk.units[n - 1 - back].expert : chunk.units[n - 1 - back].dense;
      if (p <= 0) continue;
      open.params += p;
      open.units.push_back(back);
      open.trigger = back;
      if (open.params >= bucket_params) {
        chunk.buckets.push_back(open);
        open = Bucket{};
        open.expert = expert;
      }
    }
    if (open.params > 0) chunk.buckets.push_back(open);
  }
}

// The units (embedding, layers, output) of every pipeline stage's model chunks, with their
// parameters, activations and gradient buckets, and the units' names.
struct StageUnits {
  std::vector<std::string> unit_names;
  std::vector<std::vector<Chunk>> stage_chunks;  // per pipeline stage
};

StageUnits make_stage_units(const ModelSpec& m, const ResolvedStrategy& r) {
  const Strategy& s = r.s;
  const Geometry q = geometry(m, r);
  StageUnits out;
  std::vector<std::string>& unit_names = out.unit_names;
  const double normp = m.norm == NormKind::LayerNorm ? 2.0 * q.h : q.h;
  std::vector<std::vector<Chunk>>& stage_chunks = out.stage_chunks;
  stage_chunks.resize(s.pp);
  std::vector<int> generic_entry;  // expanded layer -> generic entry
  for (size_t e = 0; e < m.generic_layers.size(); ++e)
    for (int64_t k = 0; k < m.generic_layers[e].repeat; ++k) generic_entry.push_back(int(e));
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string base = m.is_generic() ? m.generic_layers[generic_entry[l]].name : "layer";
    unit_names.push_back(base + std::to_string(l));
  }
  const uint32_t embedding_name = static_cast<uint32_t>(unit_names.size());
  unit_names.push_back("embedding");
  const uint32_t output_name = static_cast<uint32_t>(unit_names.size());
  unit_names.push_back("output");

  const Recompute none = Recompute::None;
  const double layer_act = m.is_generic() ? 0 : activation_bytes_of_layer(m, r, m.is_moe(), s.recompute);
  const double layer_full = m.is_generic() ? 0 : activation_bytes_of_layer(m, r, m.is_moe(), none);
  Unit layer_unit;
  if (!m.is_generic()) {
    const double bias = m.bias ? 1.0 : 0.0;
    layer_unit.dense = q.h * (q.h + 2 * q.dkv) / q.t + bias * (q.h + 2 * q.dkv) / q.t +
                       q.h * q.h / q.t + 2 * normp + bias * q.h;
    layer_unit.replicated = 2 * normp + bias * q.h;
    if (m.is_moe()) {
      layer_unit.dense += q.h * q.E;
      layer_unit.replicated += q.h * q.E;
      layer_unit.expert = q.El * (q.mlp_in * q.h * q.fe + q.fe * q.h + bias * (q.mlp_in * q.fe + q.h));
    } else {
      layer_unit.dense += q.mlp_in * q.h * q.f / q.t + q.f * q.h / q.t + bias * (q.mlp_in * q.f / q.t + q.h);
      layer_unit.replicated += bias * q.h;
    }
    layer_unit.tensors = {normp, q.h * (q.h + 2 * q.dkv) / q.t, q.h * q.h / q.t, normp};
    if (m.bias) layer_unit.tensors.insert(layer_unit.tensors.end(), {(q.h + 2 * q.dkv) / q.t, q.h});
    if (m.is_moe()) {
      layer_unit.tensors.push_back(q.h * q.E);
      for (double e = 0; e < q.El; ++e) {
        layer_unit.expert_tensors.insert(layer_unit.expert_tensors.end(), {q.mlp_in * q.h * q.fe, q.fe * q.h});
        if (m.bias) layer_unit.expert_tensors.insert(layer_unit.expert_tensors.end(), {q.mlp_in * q.fe, q.h});
      }
    } else {
      layer_unit.tensors.insert(layer_unit.tensors.end(), {q.mlp_in * q.h * q.f / q.t, q.f * q.h / q.t});
      if (m.bias) layer_unit.tensors.insert(layer_unit.tensors.end(), {q.mlp_in * q.f / q.t, q.h});
    }
    layer_unit.activations = layer_act;
    layer_unit.full_activations = layer_full;
  }
  const double bucket_params = s.bucket_mb * 1024.0 * 1024.0 / dtype_bytes(s.grad_dtype);
  for (int vs = 0; vs < r.virtual_stages; ++vs) {
    Chunk chunk;
    chunk.virtual_stage = vs;
    if (vs == 0 && !m.is_generic()) {
      Unit u;
      u.embedding = true;
      u.name_unit = embedding_name;
      u.dense = u.vocab = q.V * q.h / q.te;
      u.tensors = {u.vocab};
      if (m.position == PositionKind::Learned)
        u.dense += q.s * q.h, u.replicated += q.s * q.h, u.tensors.push_back(q.s * q.h);
      u.activations = u.full_activations = q.dropout ? q.Tr * q.h : 0.0;
      chunk.units.push_back(u);
    }
    for (int64_t l = r.stage_first_layer[vs]; l < r.stage_first_layer[vs] + r.stage_layers[vs]; ++l) {
      Unit u = layer_unit;
      u.layer = static_cast<int>(l);
      u.name_unit = static_cast<uint32_t>(l);
      if (m.is_generic()) {
        const GenericLayer& g = m.generic_layers[generic_entry[l]];
        u.generic_entry = generic_entry[l];
        u.dense = g.params >= 0 ? g.params
                  : g.kind == GenericLayer::Kind::Gemm ? double(g.n) * g.k + (g.bias ? g.n : 0) : 0;
        u.tensors = {u.dense};
        const double act = g.activation_bytes >= 0 ? g.activation_bytes
                           : g.kind == GenericLayer::Kind::Gemm ? double(g.m) * g.k * q.eb : 0;
        u.activations = u.full_activations = q.b * act;
      }
      chunk.units.push_back(u);
    }
    if (vs == r.virtual_stages - 1 && !m.is_generic()) {
      Unit u;
      u.output = true;
      u.name_unit = output_name;
      u.vocab = (!m.tied_embeddings || s.pp > 1) ? q.V * q.h / q.te : 0.0;
      u.dense = normp + u.vocab;
      u.replicated = normp;
      u.tensors = {normp};
      if (u.vocab > 0) u.tensors.push_back(u.vocab);
      u.activations = u.full_activations =
          q.Tr * q.h * q.eb + (q.sp ? q.T / q.t : q.Te) * q.h * q.eb + q.Te * q.V / q.te * 4.0;
      chunk.units.push_back(u);
    }
    for (const Unit& u : chunk.units) chunk.activations += u.activations;
    fill_buckets(chunk, bucket_params);
    stage_chunks[vs % s.pp].push_back(std::move(chunk));
  }
  return out;
}

// Bytes one rank of each pipeline stage holds (docs/workloads.md, "Memory model"); the
// (micro-batch, chunk) units each stage holds at its peak go to peak_in_flight when given.
std::vector<MemoryBreakdown> memory_by_stage(const ModelSpec& m, const ResolvedStrategy& r,
                                             const std::vector<std::vector<Chunk>>& stage_chunks,
                                             std::vector<int64_t>* peak_in_flight) {
  const Strategy& s = r.s;
  const Geometry q = geometry(m, r);
  const int dp_size = s.dp * s.cp, edp_size = r.edp * s.cp * s.tp;
  const double eb = q.eb, gb = dtype_bytes(s.grad_dtype);
  const double ob = (s.dtype == DType::FP32 || s.dtype == DType::TF32) ? 8.0 : 12.0;
  std::vector<MemoryBreakdown> stage_memory(s.pp);
  if (peak_in_flight != nullptr) peak_in_flight->resize(s.pp);
  // The largest single weight tensor of a unit, per rank (ZeRO-3 gathers tensors whole): the
  // vocabulary matrix V h / e (else the learned positions or the final norm); in a layer QKV,
  // the projection, fc1 (gate and up fused for SwiGLU), fc2, or one expert's and the router;
  // a generic layer is one module.
  const double layer_weight =
      m.is_generic() ? 0.0
      : std::max({q.h * (q.h + 2 * q.dkv) / q.t, q.h * q.h / q.t,
                  m.is_moe() ? std::max({q.mlp_in * q.h * q.fe, q.fe * q.h, q.h * q.E})
                             : std::max(q.mlp_in * q.h * q.f / q.t, q.f * q.h / q.t)});
  auto largest_weight = [&](const Unit& u) {
    if (m.is_generic()) return u.dense + u.expert;
    if (u.embedding || u.output) return std::max(u.vocab, u.dense - u.vocab);
    return layer_weight;
  };
  for (int stage = 0; stage < s.pp; ++stage) {
    MemoryBreakdown& mem = stage_memory[stage];
    const auto& chunks = stage_chunks[stage];
    double dense = 0, expert = 0, largest_unit = 0, largest_layer = 0, largest_tensor = 0;
    for (const Chunk& c : chunks)
      for (const Unit& u : c.units) {
        dense += u.dense;
        expert += u.expert;
        largest_unit = std::max(largest_unit, u.dense + u.expert);
        if (u.layer >= 0) largest_layer = std::max(largest_layer, u.full_activations);
        largest_tensor = std::max(largest_tensor, largest_weight(u));
      }
    auto sharded = [&](double bytes_per_param, bool shard) {
      return bytes_per_param * (dense / (shard ? dp_size : 1) + expert / (shard ? edp_size : 1));
    };
    mem.params = sharded(eb, s.zero >= 3);
    mem.grads = sharded(gb, s.zero >= 2);
    mem.optimizer = sharded(ob, s.zero >= 1);
    const auto steps = pipeline_schedule(s.schedule, s.pp, stage, r.micro_batches, s.vpp,
                                         s.extra_warmup.empty() ? 0 : s.extra_warmup[size_t(stage)]);
    if (peak_in_flight != nullptr) (*peak_in_flight)[stage] = workloads::peak_in_flight(steps);
    double held = 0;
    for (const PipelineStep& step : steps) {
      held += (step.forward ? 1.0 : -1.0) * chunks[step.chunk].activations;
      mem.activations = std::max(mem.activations, held);
    }
    if (s.recompute == Recompute::Full && !m.is_generic()) mem.temporary += largest_layer;
    if (q.sp) mem.temporary += q.T * q.h * q.eb;
    if (s.zero == 3) {
      // ZeRO-3's working buffers, as DeepSpeed holds them with its defaults (docs/workloads.md,
      // "Memory model"). Parameters are gathered module by module (a Linear's or Embedding's
      // whole weight: a tensor is never gathered in parts, so the largest one, V h / e for an
      // unsplit vocabulary, is live at once) and prefetched ahead only while fewer than
      // stage3_max_live_parameters (1e9) are live; stage3_prefetch_bucket_size only bounds
      // each prefetch, within that limit. So at most max(1e9, largest tensor) gathered
      // parameters, and never more than the unit being computed and the next one (what our
      // program gathers). Backward adds the unsharded
      // gradient of the module just computed (autograd's output, compute dtype) and the
      // reduce bucket it is copied into, reduce_bucket_size (5e8) elements (at most the stage's
      // parameters) in the grad dtype, reduce-scattered into the sharded `grads`. DeepSpeed's
      // own estimate (estimate_zero3_model_states_mem_needs) likewise charges 4 bytes per
      // parameter of the largest layer on top of the sharded states. The whole unit's
      // parameters twice plus its unsharded gradients, as before, gave GPT 530B at dp 640 a
      // 5e9-parameter layer three times over (37.5 GiB) where DeepSpeed ran it on 80 GB GPUs.
      constexpr double kMaxLiveParameters = 1e9;     // stage3_max_live_parameters
      constexpr double kReduceBucketElements = 5e8;  // reduce_bucket_size
      const double gathered = std::min(2 * largest_unit, std::max(kMaxLiveParameters, largest_tensor));
      const double bucket = std::min(kReduceBucketElements, dense + expert);
      mem.temporary += eb * gathered + eb * largest_tensor + gb * bucket;
    }
    if (s.zero == 2) mem.temporary += s.bucket_mb * 1024.0 * 1024.0;
    mem.peak = mem.params + mem.grads + mem.optimizer + mem.activations + mem.temporary;
  }
  return stage_memory;
}

// How a program built with name and stream tables of its own (`local`) renumbers into the
// job's: the job's tables gain the names it does not have yet.
struct Renumbering {
  std::vector<uint32_t> name_of;
  std::vector<uint16_t> stream_of;
  bool same = true;  // every number stays

  Renumbering(Job& job, const Job& local) : name_of(local.names.size()), stream_of(local.stream_names.size()) {
    for (size_t i = 0; i < local.names.size(); ++i) {
      name_of[i] = job.intern(local.names[i]);
      same = same && name_of[i] == i;
    }
    for (size_t i = 0; i < local.stream_names.size(); ++i) {
      stream_of[i] = job.intern_stream(local.stream_names[i]);
      same = same && stream_of[i] == i;
    }
  }
  void apply(Program& program) const {
    if (same) return;
    for (Op& op : program.ops) {
      op.name = name_of[op.name];
      op.stream = stream_of[op.stream];
      if (op.algorithm != 0) op.algorithm = name_of[op.algorithm];
    }
  }
};

// One program per pipeline stage, the stages built side by side (`threads`: 0, one per core).
// Each stage names its ops and streams in tables of its own, merged into the job's in stage
// order: the job's names, and the numbers its ops hold, are those of building the stages one
// after another, whatever the number of threads.
std::vector<std::shared_ptr<Program>> build_stage_programs(Job& job, const ModelSpec& m, const ResolvedStrategy& r,
                                                           const Framework& framework,
                                                           const CommunicatorSlots& slots, const StageUnits& units,
                                                           int threads) {
  const Strategy& s = r.s;
  const int dp_size = s.dp * s.cp, edp_size = r.edp * s.cp * s.tp;
  std::vector<std::shared_ptr<Program>> programs(s.pp);
  std::vector<Job> tables(s.pp);
  // A stage has about as many ops as the first: reserving that much saves copying a program of
  // millions of ops as it grows.
  auto build = [&](int stage) {
    programs[stage] = std::make_shared<Program>();
    if (stage > 0) programs[stage]->ops.reserve(programs[0]->ops.size() + programs[0]->ops.size() / 8);
    CommunicatorSlots stage_slots = slots;
    if (stage != 0 && stage != s.pp - 1)
      stage_slots.embedding = stage_slots.embedding_tp = stage_slots.embedding_replica = -1;
    StageBuilder builder(tables[stage], *programs[stage], m, r, framework, stage_slots, units.unit_names);
    builder.set_group_sizes(dp_size, edp_size);
    builder.build(stage, units.stage_chunks[stage]);
  };
  build(0);
  parallel_for(s.pp - 1, [&](int i) { build(i + 1); }, threads);
  std::vector<Renumbering> renumbering;
  for (int stage = 0; stage < s.pp; ++stage) renumbering.emplace_back(job, tables[stage]);
  parallel_for(s.pp, [&](int stage) { renumbering[stage].apply(*programs[stage]); }, threads);
  return programs;
}

CompiledJob compile(const ModelSpec& m, const Strategy& strategy, int gpus,
                    const Framework& framework, int threads) {
  CompiledJob out;
  out.strategy = resolve(m, strategy, gpus);
  const ResolvedStrategy& r = out.strategy;
  const Strategy& s = r.s;
  Job& job = out.job;
  const Layout layout(r);

  const Families families = make_communicators(m, r, layout, job);
  const CommunicatorSlots& slots = families.slots;
  out.slots = slots;
  const std::vector<std::vector<int>>& slot_of_rank = families.slot_of_rank;
  const StageUnits units = make_stage_units(m, r);

  // ---- one program per stage ----
  const std::vector<std::shared_ptr<Program>> programs =
      build_stage_programs(job, m, r, framework, slots, units, threads);

  // ---- ranks ----
  job.ranks.resize(layout.world);
  out.stage_of_rank.resize(layout.world);
  for (int rank = 0; rank < layout.world; ++rank) {
    Rank& rk = job.ranks[rank];
    rk.rank = rank;
    const int stage = layout.coord(rank, Axis::PP);
    out.stage_of_rank[rank] = stage;
    rk.program = programs[stage];
    for (const auto& family : slot_of_rank)
      if (family[rank] >= 0) rk.communicators.push_back(family[rank]);
    if (s.pp > 1) {
      rk.peers = {layout.with(rank, Axis::PP, (stage + s.pp - 1) % s.pp),
                  layout.with(rank, Axis::PP, (stage + 1) % s.pp)};
    }
  }

  // ---- memory ----
  const std::vector<MemoryBreakdown> stage_memory = memory_by_stage(m, r, units.stage_chunks, &out.peak_in_flight);
  out.memory.resize(layout.world);
  for (int rank = 0; rank < layout.world; ++rank) out.memory[rank] = stage_memory[out.stage_of_rank[rank]];

  // ---- iteration facts ----
  job.info.model = m.name;
  job.info.global_batch = s.global_batch;
  job.info.seq_length = m.seq_length;
  const FlopCount flops = count_flops(job);
  job.info.model_flops = flops.model;
  job.info.hardware_flops = flops.hardware;
  return out;
}

std::vector<MemoryBreakdown> estimate_stage_memory(const ModelSpec& model, const Strategy& strategy, int gpus) {
  const ResolvedStrategy r = resolve(model, strategy, gpus);
  return memory_by_stage(model, r, make_stage_units(model, r).stage_chunks, nullptr);
}

FlopCount count_flops(const Job& job) {
  // Each distinct program counted once (side by side: a large job has millions of ops), times
  // the ranks that run it.
  const DistinctPrograms programs = distinct_programs(job);
  std::vector<FlopCount> per_program(programs.size());
  parallel_for(static_cast<int>(programs.size()), [&](int p) {
    FlopCount& c = per_program[size_t(p)];
    for (const Op& op : job.ranks[programs.first_rank[size_t(p)]].program->ops) {
      if (op.kind != OpKind::Compute || !op.matmul) continue;
      c.hardware += op.flops;
      if (op.phase != ComputePhase::Recompute) c.model += op.flops;
    }
  });
  FlopCount total;
  for (size_t p = 0; p < programs.size(); ++p) {
    total.model += per_program[p].model * double(programs.ranks[p]);
    total.hardware += per_program[p].hardware * double(programs.ranks[p]);
  }
  return total;
}

void check_memory(const CompiledJob& compiled, double hbm_bytes) {
  for (size_t rank = 0; rank < compiled.memory.size(); ++rank) {
    const double needs = compiled.memory[rank].peak;
    if (needs <= hbm_bytes) continue;
    char text[160];
    const double gib = 1024.0 * 1024.0 * 1024.0;
    std::snprintf(text, sizeof text, "out of memory on rank %zu: needs %.2f GiB, has %.2f GiB", rank,
                  needs / gib, hbm_bytes / gib);
    throw OutOfMemoryError(text, static_cast<int>(rank), needs, hbm_bytes);
  }
}

Throughput throughput(const IterationInfo& info, int gpus, double seconds, double peak_flops) {
  Throughput t;
  if (gpus <= 0 || seconds <= 0) return t;
  t.model_tflops_per_gpu = info.model_flops / (gpus * seconds) / 1e12;
  t.hardware_tflops_per_gpu = info.hardware_flops / (gpus * seconds) / 1e12;
  if (peak_flops > 0) t.mfu = info.model_flops / (gpus * seconds * peak_flops);
  return t;
}

}  // namespace tessera::workloads
