#include "analytic/rank_classes.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

namespace tessera::analytic {
namespace {

using Signature = std::vector<int64_t>;

// Interns signatures as small numbers, in the order first seen.
class Interner {
 public:
  int id(const Signature& s) {
    auto [it, inserted] = ids_.emplace(s, static_cast<int>(ids_.size()));
    return it->second;
  }
  int size() const { return static_cast<int>(ids_.size()); }

 private:
  std::map<Signature, int> ids_;
};

Signature shape_signature(const models::CommunicatorShape& s) {
  Signature sig{s.ranks, s.nodes, s.gpus_per_node, s.network_nodes, s.node_blocks, s.dimensions_given};
  sig.insert(sig.end(), s.dimensions.begin(), s.dimensions.end());
  return sig;
}

bool same_op(const workloads::Op& a, const workloads::Op& b) {
  return a.kind == b.kind && a.stream == b.stream && a.name == b.name && a.deps == b.deps &&
         a.phase == b.phase && a.dtype == b.dtype && a.flops == b.flops && a.bytes == b.bytes &&
         a.gemm.m == b.gemm.m && a.gemm.n == b.gemm.n && a.gemm.k == b.gemm.k &&
         a.gemm.batch == b.gemm.batch && a.kernel == b.kernel && a.kernels == b.kernels &&
         a.elements == b.elements && a.collective == b.collective &&
         a.message_bytes == b.message_bytes && a.slot == b.slot && a.tag == b.tag &&
         a.algorithm == b.algorithm && a.splits == b.splits && a.micro_batch == b.micro_batch;
}

bool same_program(const workloads::Program& a, const workloads::Program& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!same_op(a.ops[i], b.ops[i])) return false;
  return true;
}

// Programs by content: ranks may hold equal programs in separate objects (a job file's).
class ProgramIds {
 public:
  int id(const workloads::Program* program) {
    auto known = by_pointer_.find(program);
    if (known != by_pointer_.end()) return known->second;
    int id = -1;
    for (size_t k = 0; k < distinct_.size() && id < 0; ++k)
      if (same_program(*distinct_[k], *program)) id = static_cast<int>(k);
    if (id < 0) {
      id = static_cast<int>(distinct_.size());
      distinct_.push_back(program);
    }
    return by_pointer_[program] = id;
  }

 private:
  std::unordered_map<const workloads::Program*, int> by_pointer_;
  std::vector<const workloads::Program*> distinct_;
};

// The first class partition: program, and per slot the communicator's shape and which earlier
// slot names the same communicator.
std::vector<int> initial_classes(const workloads::Job& job, const std::vector<models::CommunicatorShape>& shapes) {
  Interner shape_ids, classes;
  std::vector<int> shape_of(shapes.size());
  for (size_t c = 0; c < shapes.size(); ++c) shape_of[c] = shape_ids.id(shape_signature(shapes[c]));
  ProgramIds programs;
  std::vector<int> of_rank(job.ranks.size());
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const workloads::Rank& rank = job.ranks[r];
    const int program = programs.id(rank.program.get());
    Signature sig{program, static_cast<int64_t>(rank.communicators.size()), static_cast<int64_t>(rank.peers.size())};
    for (size_t s = 0; s < rank.communicators.size(); ++s) {
      const int c = rank.communicators[s];
      sig.push_back(c < 0 ? -1 : shape_of[size_t(c)]);
      sig.push_back(c < 0 ? -1 : slot_of(rank, c));
    }
    for (int peer : rank.peers) sig.push_back(peer < 0 ? -1 : 0);
    of_rank[r] = classes.id(sig);
  }
  return of_rank;
}

}  // namespace

int slot_of(const workloads::Rank& rank, int communicator) {
  for (size_t s = 0; s < rank.communicators.size(); ++s)
    if (rank.communicators[s] == communicator) return static_cast<int>(s);
  return -1;
}

RankClasses rank_classes(const workloads::Job& job, const std::vector<models::CommunicatorShape>& shapes) {
  std::vector<int> of_rank = initial_classes(job, shapes);
  int count = *std::max_element(of_rank.begin(), of_rank.end()) + 1;
  // Each member's slot in each communicator does not change: find it once.
  std::vector<std::vector<std::pair<int, int>>> members(job.communicators.size());  // (rank, slot)
  for (size_t c = 0; c < job.communicators.size(); ++c)
    for (int m : job.communicators[c].ranks) members[c].emplace_back(m, slot_of(job.ranks[size_t(m)], int(c)));
  while (true) {
    // A communicator's signature: its members' (class, slot), as a sorted multiset.
    Interner communicator_ids;
    std::vector<int> communicator_class(job.communicators.size());
    for (size_t c = 0; c < members.size(); ++c) {
      Signature sig;
      for (const auto& [m, slot] : members[c]) sig.push_back(int64_t(of_rank[size_t(m)]) << 16 | slot);
      std::sort(sig.begin(), sig.end());
      communicator_class[c] = communicator_ids.id(sig);
    }
    Interner classes;
    std::vector<int> next(job.ranks.size());
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      const workloads::Rank& rank = job.ranks[r];
      Signature sig{of_rank[r]};
      for (int c : rank.communicators) sig.push_back(c < 0 ? -1 : communicator_class[size_t(c)]);
      for (int peer : rank.peers) sig.push_back(peer < 0 ? -1 : of_rank[size_t(peer)]);
      next[r] = classes.id(sig);
    }
    of_rank.swap(next);
    if (classes.size() == count) break;  // refining only splits: equal counts, same partition
    count = classes.size();
  }
  RankClasses out;
  out.of_rank = std::move(of_rank);
  out.representative.assign(size_t(count), -1);
  for (size_t r = 0; r < out.of_rank.size(); ++r)
    if (out.representative[size_t(out.of_rank[r])] < 0) out.representative[size_t(out.of_rank[r])] = int(r);
  return out;
}

}  // namespace tessera::analytic
