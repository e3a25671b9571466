#include "workloads/program.h"

#include "workloads/limits.h"
#include "workloads/parallel_for.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <string>

namespace tessera::workloads {

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Compute: return "compute";
    case OpKind::Collective: return "collective";
    case OpKind::Send: return "send";
    case OpKind::Recv: return "recv";
    case OpKind::MemCopy: return "memcopy";
  }
  return "?";
}

const char* to_string(ComputePhase phase) {
  switch (phase) {
    case ComputePhase::Forward: return "forward";
    case ComputePhase::BackwardInput: return "backward_input";
    case ComputePhase::BackwardWeight: return "backward_weight";
    case ComputePhase::Optimizer: return "optimizer";
    case ComputePhase::Recompute: return "recompute";
    case ComputePhase::Other: return "other";
  }
  return "?";
}

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "allreduce";
    case CollectiveKind::ReduceScatter: return "reducescatter";
    case CollectiveKind::AllGather: return "allgather";
    case CollectiveKind::AllToAll: return "alltoall";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::AllToAllV: return "alltoallv";
  }
  return "?";
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::FP32: return "fp32";
    case DType::TF32: return "tf32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
  }
  return "?";
}

namespace {
constexpr const char* kKernelKindNames[kKernelKinds] = {
    "gemm",     "attention_gemm", "flash_attention", "norm",          "softmax",     "dropout",
    "activation", "bias",         "residual",        "rotary",        "embedding",   "cross_entropy",
    "moe_routing", "optimizer",   "framework",       "elementwise"};
}  // namespace

const char* to_string(KernelKind kind) {
  const int i = static_cast<int>(kind);
  return i < kKernelKinds ? kKernelKindNames[i] : "?";
}

bool parse_kernel_kind(const std::string& name, KernelKind& out) {
  for (int i = 0; i < kKernelKinds; ++i) {
    if (name == kKernelKindNames[i]) {
      out = static_cast<KernelKind>(i);
      return true;
    }
  }
  return false;
}

uint32_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::FP32:
    case DType::TF32: return 4;
    case DType::FP16:
    case DType::BF16: return 2;
    case DType::FP8: return 1;
  }
  return 2;
}

bool parse_dtype(const std::string& name, DType& out) {
  for (DType d : {DType::FP32, DType::TF32, DType::FP16, DType::BF16, DType::FP8}) {
    if (name == to_string(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

bool parse_collective_kind(const std::string& name, CollectiveKind& out) {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
                           CollectiveKind::AllGather, CollectiveKind::AllToAll,
                           CollectiveKind::Broadcast, CollectiveKind::Reduce,
                           CollectiveKind::Barrier, CollectiveKind::AllToAllV}) {
    if (name == to_string(k)) {
      out = k;
      return true;
    }
  }
  return false;
}

uint32_t Job::intern(const std::string& name) {
  if (name_index_.empty()) {
    for (uint32_t i = 0; i < names.size(); ++i) name_index_.emplace(names[i], i);
  }
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names.size());
  names.push_back(name);
  name_index_.emplace(name, id);
  return id;
}

uint16_t Job::intern_stream(const std::string& name) {
  auto it = std::find(stream_names.begin(), stream_names.end(), name);
  if (it == stream_names.end()) it = stream_names.insert(it, name);
  return static_cast<uint16_t>(it - stream_names.begin());
}

namespace {

// An op's work within what tessera represents: a value past them (an overflow upstream, NaN)
// named with its value instead of simulated as if it were zero or negative.
template <typename Where>
void check_work(const Job& job, const Op& op, const Where& at) {
  struct Work {
    const char* what;
    double value, most;
  };
  const Work work[] = {{"FLOPs", op.flops, limits::kMaxOpFlops},
                       {"bytes", op.bytes, limits::kMaxOpBytes},
                       {"message bytes", double(op.message_bytes), limits::kMaxOpBytes}};
  for (const Work& w : work) {
    if (w.value >= 0 && w.value <= w.most) continue;  // (what limits::problem accepts, without a string)
    const std::string problem = limits::problem(w.value, limits::non_negative(w.most));
    if (!problem.empty())
      throw std::invalid_argument("invalid job: " + at() + " '" + job.op_name(op) + "': its " + w.what + " " + problem +
                                  " (docs/limits.md)");
  }
}

}  // namespace

DistinctPrograms distinct_programs(const Job& job) {
  DistinctPrograms out;
  std::unordered_map<const Program*, size_t> index;
  out.of_rank.assign(job.ranks.size(), DistinctPrograms::kNone);
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const Program* program = job.ranks[i].program.get();
    if (!program) continue;
    const auto [it, added] = index.emplace(program, out.size());
    if (added) {
      out.first_rank.push_back(i);
      out.ranks.push_back(0);
    }
    out.of_rank[i] = it->second;
    ++out.ranks[it->second];
  }
  return out;
}

namespace {

// What a program's ops use of its rank, gathered while they are checked.
struct ProgramFacts {
  std::vector<int> collective_slots;  // distinct communicator slots used
  int max_peer_slot = -1;
  std::string error;  // the first op that is wrong (empty: none)
};

// Checks a program's ops; `where` names the first rank that runs it.
ProgramFacts check_program(const Job& job, const Program& program, const std::string& where) {
  ProgramFacts facts;
  auto fail = [](const std::string& what) { throw std::invalid_argument("invalid job: " + what); };
  std::vector<bool> slot_seen;
  const auto& ops = program.ops;
  try {
    for (size_t o = 0; o < ops.size(); ++o) {
      const Op& op = ops[o];
      // (the op's place named only when something is wrong: a job has millions of ops)
      const auto at = [&] { return where + " op " + std::to_string(o); };
      if (op.stream >= job.stream_names.size()) fail(at() + " uses an unnamed stream");
      if (op.name >= job.names.size()) fail(at() + " has an unknown name");
      for (OpId d : op.deps)
        if (d >= o) fail(at() + " depends on a later op " + std::to_string(d));
      if (op.kind == OpKind::Collective) {
        if (op.slot < 0) fail(at() + " names communicator slot " + std::to_string(op.slot));
        if (static_cast<size_t>(op.slot) >= slot_seen.size()) slot_seen.resize(op.slot + 1, false);
        if (!slot_seen[op.slot]) facts.collective_slots.push_back(op.slot);
        slot_seen[op.slot] = true;
        if (op.collective == CollectiveKind::AllToAllV && (op.splits == 0 || op.splits > job.splits.size()))
          fail(at() + " is an all-to-all-v without a size matrix");
        if (op.algorithm >= job.names.size()) fail(at() + " names an unknown algorithm");
      }
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        if (op.slot < 0) fail(at() + " names peer slot " + std::to_string(op.slot));
        facts.max_peer_slot = std::max(facts.max_peer_slot, int(op.slot));
        if (op.message_bytes == 0) fail(at() + " moves zero bytes");
      }
      check_work(job, op, at);
    }
  } catch (const std::invalid_argument& e) {
    facts.error = e.what();
  }
  return facts;
}

}  // namespace

void validate(const Job& job) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("invalid job: " + what); };
  if (job.ranks.empty()) fail("no ranks");
  for (size_t c = 0; c < job.communicators.size(); ++c) {
    const Communicator& comm = job.communicators[c];
    if (comm.ranks.empty()) fail("communicator " + comm.name + " has no ranks");
    for (int r : comm.ranks)
      if (r < 0 || r >= static_cast<int>(job.ranks.size()))
        fail("communicator " + comm.name + " names rank " + std::to_string(r));
  }
  // Ranks share programs (a 1,024-GPU job has a few): each program's ops are checked once, the
  // programs side by side, and each rank only for the slots its program uses; a program's error
  // is told at the first rank that runs it, as checking rank by rank would.
  const DistinctPrograms programs = distinct_programs(job);
  std::vector<ProgramFacts> checked(programs.size());
  parallel_for(static_cast<int>(programs.size()), [&](int p) {
    const size_t first = programs.first_rank[size_t(p)];
    checked[size_t(p)] = check_program(job, *job.ranks[first].program, "rank " + std::to_string(first));
  });
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const Rank& rank = job.ranks[i];
    const std::string where = "rank " + std::to_string(i);
    if (rank.rank != static_cast<int>(i)) fail(where + " is numbered " + std::to_string(rank.rank));
    if (!rank.program) fail(where + " has no program");
    for (int c : rank.communicators)
      if (c < 0 || c >= static_cast<int>(job.communicators.size()))
        fail(where + " maps a slot to communicator " + std::to_string(c));
    for (int p : rank.peers)
      if (p < 0 || p >= static_cast<int>(job.ranks.size()) || p == rank.rank)
        fail(where + " maps a slot to peer " + std::to_string(p));
    const size_t p = programs.of_rank[i];
    const ProgramFacts& facts = checked[p];
    if (programs.first_rank[p] == i && !facts.error.empty()) throw std::invalid_argument(facts.error);
    if (facts.max_peer_slot >= static_cast<int>(rank.peers.size()))
      fail(where + " has a program that names peer slot " + std::to_string(facts.max_peer_slot));
    for (int slot : facts.collective_slots) {
      if (slot >= static_cast<int>(rank.communicators.size()))
        fail(where + " has a program that names communicator slot " + std::to_string(slot));
      const Communicator& comm = job.communicators[rank.communicators[slot]];
      if (std::find(comm.ranks.begin(), comm.ranks.end(), rank.rank) == comm.ranks.end())
        fail(where + " uses communicator " + comm.name + " without being a member");
    }
  }
}

}  // namespace tessera::workloads
