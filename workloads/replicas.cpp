#include "workloads/replicas.h"

#include <algorithm>
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

namespace {

// A node's calls in its own terms: per place, its program, then per slot the places of the
// call's members in the node (-1: a call that reaches beyond it). What a mirror must match.
class NodeShapes {
 public:
  NodeShapes(const Job& job, int gpus_per_node) : job_(job), g_(gpus_per_node) {
    // Per communicator: whether one node holds all its members.
    internal_.assign(job.communicators.size(), false);
    for (size_t c = 0; c < job.communicators.size(); ++c) {
      const std::vector<int>& members = job.communicators[c].ranks;
      internal_[c] = !members.empty() && std::all_of(members.begin(), members.end(), [&](int m) {
        return m / g_ == members.front() / g_;
      });
    }
  }
  // Nodes holding two members of a call that reaches beyond them.
  std::vector<bool> crowded_nodes(size_t nodes) const {
    std::vector<bool> out(nodes, false);
    std::map<int, int> per_node;
    for (size_t c = 0; c < internal_.size(); ++c) {
      if (internal_[c]) continue;
      per_node.clear();
      for (int m : job_.communicators[c].ranks)
        if (++per_node[m / g_] > 1) out[size_t(m / g_)] = true;
    }
    return out;
  }
  bool internal_communicator(int c) const { return c >= 0 && internal_[size_t(c)]; }
  // A communicator inside one node that holds all of its GPUs.
  bool whole_node(int c) const {
    return internal_communicator(c) && job_.communicators[size_t(c)].ranks.size() == size_t(g_);
  }
  bool internal_peer(int rank, int peer) const { return peer >= 0 && rank / g_ == peer / g_; }
  std::vector<intptr_t> shape(int node) const {
    std::vector<intptr_t> out;
    for (int place = 0; place < g_; ++place) {
      const Rank& r = job_.ranks[size_t(node * g_ + place)];
      out.push_back(reinterpret_cast<intptr_t>(r.program.get()));
      for (int c : r.communicators) {
        out.push_back(-2);  // a slot
        if (!internal_communicator(c)) continue;
        for (int m : job_.communicators[size_t(c)].ranks) out.push_back(m % g_);
      }
      for (int peer : r.peers) out.push_back(internal_peer(r.rank, peer) ? -3 - peer % g_ : -1);
    }
    return out;
  }

 private:
  const Job& job_;
  const int g_;
  std::vector<bool> internal_;
};

}  // namespace

QuietNodes quiet_nodes(const Job& job, const Replicas& replicas, int gpus_per_node) {
  QuietNodes q;
  const size_t n = job.ranks.size();
  q.communicators.resize(n);
  q.peers.resize(n);
  if (gpus_per_node <= 0 || n % size_t(gpus_per_node) != 0) return q;  // whole nodes only
  const size_t nodes = n / size_t(gpus_per_node);
  q.mirror.assign(nodes, -1);
  const NodeShapes shapes(job, gpus_per_node);
  const std::vector<bool> crowded = shapes.crowded_nodes(nodes);
  std::vector<bool> simulated(nodes, false);
  for (size_t r = 0; r < n; ++r)
    if (replicas.representative[r] == int(r)) simulated[r / size_t(gpus_per_node)] = true;
  // The first node with a simulated GPU of each shape mirrors the quiet nodes of that shape.
  std::map<std::vector<intptr_t>, int> mirrors;
  for (size_t node = 0; node < nodes; ++node)
    if (simulated[node] && !crowded[node]) mirrors.emplace(shapes.shape(int(node)), int(node));
  for (size_t node = 0; node < nodes; ++node) {
    if (simulated[node] || crowded[node]) continue;
    const auto it = mirrors.find(shapes.shape(int(node)));
    if (it == mirrors.end()) continue;
    q.mirror[node] = it->second;
    ++q.quiet;
    for (size_t r = node * size_t(gpus_per_node); r < (node + 1) * size_t(gpus_per_node); ++r) {
      const Rank& rank = job.ranks[r];
      for (int c : rank.communicators) q.communicators[r].push_back(shapes.internal_communicator(c));
      for (int peer : rank.peers) q.peers[r].push_back(shapes.internal_peer(rank.rank, peer));
    }
  }
  return q;
}

namespace {

// The node's one simulated GPU where every other GPU of the node follows it, else -1.
int lone_representative(const Replicas& replicas, size_t first, size_t gpus) {
  const int rep = replicas.representative[first];
  if (replicas.representative[size_t(rep)] != rep || size_t(rep) < first || size_t(rep) >= first + gpus) return -1;
  for (size_t r = first; r < first + gpus; ++r)
    if (replicas.representative[r] != rep) return -1;
  return rep;
}

}  // namespace

EchoNodes echo_nodes(const Job& job, const Replicas& replicas, int gpus_per_node) {
  EchoNodes e;
  const size_t n = job.ranks.size();
  e.communicators.resize(n);
  if (gpus_per_node <= 1 || n % size_t(gpus_per_node) != 0) return e;  // whole nodes only
  const size_t g = size_t(gpus_per_node), nodes = n / g;
  e.simulated.assign(nodes, -1);
  const NodeShapes shapes(job, gpus_per_node);
  const std::vector<bool> crowded = shapes.crowded_nodes(nodes);
  for (size_t node = 0; node < nodes; ++node) {
    const int rep = crowded[node] ? -1 : lone_representative(replicas, node * g, g);
    if (rep < 0) continue;
    bool echo = true, any = false;
    const std::vector<int>& own = job.ranks[size_t(rep)].communicators;
    for (size_t r = node * g; r < (node + 1) * g && echo; ++r) {
      const Rank& rank = job.ranks[r];
      for (int peer : rank.peers) echo = echo && !shapes.internal_peer(rank.rank, peer);
      for (size_t slot = 0; slot < rank.communicators.size(); ++slot) {
        const int c = rank.communicators[slot];
        // (A communicator of one GPU moves nothing: a data-parallel group of dp 1.)
        if (!shapes.internal_communicator(c) || job.communicators[size_t(c)].ranks.size() <= 1) continue;
        // The same call of the whole node at this slot on every GPU.
        echo = echo && shapes.whole_node(c) && slot < own.size() && own[slot] == c;
        any = true;
      }
    }
    if (!echo || !any) continue;
    e.simulated[node] = rep;
    ++e.echo;
    for (int c : own) e.communicators[size_t(rep)].push_back(shapes.whole_node(c));
  }
  return e;
}

}  // namespace tessera::workloads
