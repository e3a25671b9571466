// The per-rank program: what a GPU executes for one training iteration.
//
// A Program is a DAG of ops on streams with CUDA-stream semantics: ops on one stream run in
// order; an op also waits for its explicit dependencies (which may sit on other streams).
// Programs are shared between ranks that execute the same op sequence (all DP replicas of one
// pipeline stage, say): collectives and point-to-point ops name a *slot* of the rank, and each
// Rank maps its slots to concrete communicators and peer ranks. This keeps a 1,024-GPU job at a
// few distinct programs instead of a thousand copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "workloads/dep_list.h"

namespace tessera::workloads {

enum class OpKind : uint8_t { Compute, Collective, Send, Recv, MemCopy };

enum class ComputePhase : uint8_t {
  Forward,
  BackwardInput,
  BackwardWeight,
  Optimizer,
  Recompute,
  Other
};

enum class CollectiveKind : uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Broadcast,
  Reduce,
  Barrier,
  AllToAllV  // all-to-all with per-peer sizes (Op::splits)
};

enum class DType : uint8_t { FP32, TF32, FP16, BF16, FP8 };

// What a compute kernel does, as the compute model (calibration/) and the report's breakdown
// see it. GEMMs are timed from their shape; attention from its batched GEMMs or flash
// attention's measured rate; the memory-bound kinds from their bytes; framework kinds are the
// per-iteration costs a training framework adds (gradient norm, loss scaling).
enum class KernelKind : uint8_t {
  Gemm,            // a dense GEMM (Op::gemm holds m, n, k)
  AttentionGemm,   // a batched GEMM of the attention core (scores or values; Op::gemm.batch)
  FlashAttention,  // a fused attention kernel
  Norm,            // LayerNorm or RMSNorm
  Softmax,         // the attention softmax (fused scale and mask where the framework fuses it)
  Dropout,
  Activation,      // GeLU or SwiGLU (with the bias where fused)
  Bias,            // a bias add on its own (unfused frameworks)
  Residual,        // the residual add (with bias and dropout where fused)
  Rotary,
  Embedding,       // the embedding lookup and its gradient
  CrossEntropy,
  MoeRouting,      // token permutation and unpermutation
  Optimizer,       // the optimizer step (Adam)
  Framework,       // gradient-norm, clipping, loss-scale checks and other per-iteration work
  Elementwise      // anything else that only moves memory
};
constexpr int kKernelKinds = 16;

const char* to_string(OpKind kind);
const char* to_string(ComputePhase phase);
const char* to_string(CollectiveKind kind);
const char* to_string(DType dtype);
// Bytes per element of a dtype (TF32 is stored as 4 bytes).
uint32_t dtype_bytes(DType dtype);
// Parses "fp16", "bf16", ...; returns false on an unknown name.
bool parse_dtype(const std::string& name, DType& out);
bool parse_collective_kind(const std::string& name, CollectiveKind& out);
const char* to_string(KernelKind kind);  // "gemm", "attention_gemm", ..., "elementwise"
// Tensor-core work (GEMMs and the attention core's matmuls): what Op::matmul marks.
inline bool is_matmul(KernelKind kind) {
  return kind == KernelKind::Gemm || kind == KernelKind::AttentionGemm || kind == KernelKind::FlashAttention;
}
bool parse_kernel_kind(const std::string& name, KernelKind& out);

// Optional GEMM shape of a compute op (m x k times k x n). 32-bit: a large job has millions of
// ops (a GEMM's dimension past 2^31 - 1 is an input error where it is made; docs/limits.md).
// Products of them are taken in double or int64.
struct GemmShape {
  int32_t m = 0;
  int32_t n = 0;
  int32_t k = 0;
  int32_t batch = 1;  // batched GEMMs (the attention core): independent m x n x k products
  bool valid() const { return m > 0 && n > 0 && k > 0; }
};

// An op's fields are ordered by size so that none is padded: a large job has millions of ops.
struct Op {
  OpKind kind = OpKind::Compute;
  uint16_t stream = 0;           // index into Job::stream_names
  uint32_t name = 0;             // index into Job::names (interned)
  DepList deps;                  // explicit dependencies (same program), any stream

  // Compute and MemCopy
  ComputePhase phase = ComputePhase::Other;
  DType dtype = DType::BF16;
  KernelKind kernel = KernelKind::Elementwise;  // what the kernel does (compute model, report)
  uint16_t kernels = 1;          // kernels the op launches (an unfused op launches several)
  double flops = 0.0;            // floating-point operations of the kernel
  double bytes = 0.0;            // bytes the kernel moves to/from HBM (MemCopy: bytes copied)
  GemmShape gemm;                // set for GEMM kernels
  int64_t elements = 0;          // memory-bound kernels: elements of the main input tensor

  // Collective, Send and Recv
  uint64_t message_bytes = 0;    // collective: the NCCL "size" (buffer bytes per rank)
  int32_t slot = -1;             // collective: communicator slot; send/recv: peer slot
  uint32_t tag = 0;              // send/recv matching tag
  uint32_t algorithm = 0;        // index into Job::names ("ring", "nvls/simple", ...); 0 = automatic
  uint32_t splits = 0;           // AllToAllV: 1 + index into Job::splits
  CollectiveKind collective = CollectiveKind::AllReduce;

  // Added by the workload compiler (see docs/workloads.md):
  // True for tensor-core work (GEMMs and the attention core's batched matmuls). Model and
  // hardware FLOPs count only these, as Megatron's formula does; element-wise kernels carry
  // their (small) FLOPs for the compute model but are not "model FLOPs".
  bool matmul = false;
  // the micro-batch this op works on, -1 for once-per-iteration ops (optimizer, gradient
  // reduction); kept out of the op name so names stay few and interned.
  int32_t micro_batch = -1;
};
// Message sizes follow the nccl-tests convention: AllReduce and Broadcast name the buffer;
// AllGather the gathered (output) buffer; ReduceScatter the full (input) buffer; AllToAll the
// send buffer of one rank. So a TP all-gather and the all-reduce it replaces have the same size.

struct Program {
  std::vector<Op> ops;
};

struct Communicator {
  std::string name;              // e.g. "dp", "tp"
  std::vector<int> ranks;        // member ranks, in ring order
};

struct Rank {
  int rank = 0;
  std::shared_ptr<const Program> program;
  std::vector<int> communicators; // slot -> index into Job::communicators
  std::vector<int> peers;         // slot -> peer rank for Send/Recv
};

// Facts about the iteration that the report needs (not used for timing).
struct IterationInfo {
  std::string model;
  int64_t global_batch = 0;       // samples per iteration
  int64_t seq_length = 0;         // tokens per sample
  double model_flops = 0.0;       // useful FLOPs per iteration, all GPUs together
  double hardware_flops = 0.0;    // FLOPs executed including recompute
};

struct Job {
  std::vector<std::string> names{""};  // interned op names; names[0] is the empty name
  std::vector<std::string> stream_names;
  std::vector<Communicator> communicators;
  std::vector<Rank> ranks;
  IterationInfo info;
  // AllToAllV sizes: n x n bytes per matrix (row = sender position in the communicator,
  // column = receiver position).
  std::vector<std::vector<uint64_t>> splits;
  // Members of the NCCL communicator the sends and receives run on, which sets NCCL's channels
  // per peer for them (models::Tuner::p2p_plan): PyTorch runs a lone send or receive on a
  // communicator of the 2 ranks, and batched ones (torch.distributed.batch_isend_irecv, as
  // Megatron-LM's pipeline sends its activations and gradients by default) on the group's.
  int p2p_ranks = 2;

  uint32_t intern(const std::string& name);
  // The index of the stream of that name, which is added if the job has none (a job has a few).
  uint16_t intern_stream(const std::string& name);
  const std::string& op_name(const Op& op) const { return names[op.name]; }

 private:
  std::unordered_map<std::string, uint32_t> name_index_;
};

// Checks the structural invariants of a job: rank numbering, slots in range, dependencies that
// point backwards (so the DAG is acyclic), streams named. Throws std::invalid_argument.
void validate(const Job& job);

// A job's distinct programs (ranks share them), in the order its ranks first run them: each
// one's first rank and how many ranks run it; per rank, its program's place (kNone for a rank
// without a program).
struct DistinctPrograms {
  static constexpr size_t kNone = ~size_t(0);
  std::vector<size_t> first_rank, ranks;  // by program
  std::vector<size_t> of_rank;            // by rank
  size_t size() const { return first_rank.size(); }
};
DistinctPrograms distinct_programs(const Job& job);

}  // namespace tessera::workloads
