#include "workloads/replicas.h"

#include <map>
#include <numeric>

namespace tessera::workloads {
namespace {

class Groups {
 public:
  explicit Groups(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

bool one_program(const Job& job, const Communicator& c) {
  for (int member : c.ranks)
    if (job.ranks[member].program != job.ranks[c.ranks.front()].program) return false;
  return true;
}

// The groups, each its ranks in rank order.
std::vector<std::vector<int>> tied_groups(const Job& job) {
  Groups groups(job.ranks.size());
  for (const Rank& rank : job.ranks)
    for (int peer : rank.peers)
      if (peer >= 0 && size_t(peer) < job.ranks.size()) groups.join(rank.rank, peer);
  for (const Communicator& c : job.communicators)
    if (!c.ranks.empty() && !one_program(job, c))
      for (int member : c.ranks) groups.join(c.ranks.front(), member);
  std::map<int, std::vector<int>> by_root;
  for (const Rank& rank : job.ranks) by_root[groups.find(rank.rank)].push_back(rank.rank);
  std::vector<std::vector<int>> out;
  for (auto& [root, members] : by_root) out.push_back(std::move(members));
  return out;
}

}  // namespace

Replicas find_replicas(const Job& job) {
  Replicas r;
  r.representative.resize(job.ranks.size());
  std::iota(r.representative.begin(), r.representative.end(), 0);
  // The first group with each sequence of programs is simulated.
  std::map<std::vector<const Program*>, const std::vector<int>*> first;
  const std::vector<std::vector<int>> groups = tied_groups(job);
  for (const std::vector<int>& g : groups) {
    std::vector<const Program*> programs;
    for (int rank : g) programs.push_back(job.ranks[rank].program.get());
    const auto [it, fresh] = first.emplace(std::move(programs), &g);
    if (fresh) continue;
    for (size_t i = 0; i < g.size(); ++i) r.representative[g[i]] = (*it->second)[i];
  }
  for (size_t i = 0; i < r.representative.size(); ++i) r.simulated += r.representative[i] == int(i);
  return r;
}

}  // namespace tessera::workloads
