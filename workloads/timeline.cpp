#include "workloads/timeline.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>

namespace tessera::workloads {
namespace {

// Per-program graph: successors (stream order and explicit dependencies) and the number of
// predecessors of each op.
struct Graph {
  std::vector<uint32_t> pred_count;
  std::vector<std::vector<uint32_t>> successors;
};

Graph build_graph(const Program& program) {
  Graph g;
  const size_t n = program.ops.size();
  g.pred_count.assign(n, 0);
  g.successors.resize(n);
  std::unordered_map<uint16_t, uint32_t> last_on_stream;
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    std::vector<uint32_t> preds(op.deps.begin(), op.deps.end());
    auto it = last_on_stream.find(op.stream);
    if (it != last_on_stream.end()) preds.push_back(it->second);
    last_on_stream[op.stream] = i;
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (uint32_t p : preds) g.successors[p].push_back(i);
    g.pred_count[i] = static_cast<uint32_t>(preds.size());
  }
  return g;
}

struct Waiting {  // a collective instance being assembled
  int arrived = 0;
  double ready = 0;
  std::vector<std::pair<int, uint32_t>> members;  // (rank, op)
};

}  // namespace

TimelineResult run_timeline(const Job& job, const OpDuration& duration, bool record_ops) {
  const int R = static_cast<int>(job.ranks.size());
  std::unordered_map<const Program*, Graph> graphs;
  for (const Rank& rank : job.ranks)
    if (!graphs.count(rank.program.get())) graphs.emplace(rank.program.get(), build_graph(*rank.program));

  // Per rank state.
  std::vector<std::vector<uint32_t>> remaining(R);
  std::vector<std::vector<double>> ready_at(R), end(R);
  std::vector<std::vector<uint32_t>> sequence(R);  // collective: index among the rank's
                                                   // collectives on that communicator;
                                                   // send/recv: index among same (peer, tag)
  std::vector<size_t> done_count(R, 0);
  std::deque<std::pair<int, uint32_t>> ready;
  for (int r = 0; r < R; ++r) {
    const Rank& rank = job.ranks[r];
    const Graph& g = graphs.at(rank.program.get());
    const auto& ops = rank.program->ops;
    remaining[r] = g.pred_count;
    ready_at[r].assign(ops.size(), 0.0);
    end[r].assign(ops.size(), -1.0);
    sequence[r].assign(ops.size(), 0);
    std::unordered_map<int, uint32_t> per_comm;
    std::map<std::tuple<int, int, uint32_t>, uint32_t> per_tag;  // (kind, peer, tag)
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == OpKind::Collective) sequence[r][i] = per_comm[rank.communicators[op.slot]]++;
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
        sequence[r][i] = per_tag[{int(op.kind), rank.peers[op.slot], op.tag}]++;
      if (remaining[r][i] == 0) ready.emplace_back(r, i);
    }
  }
  // Matching state.
  std::map<std::pair<int, uint32_t>, Waiting> collectives;  // (communicator, sequence)
  using P2PKey = std::tuple<int, int, uint32_t, uint32_t>;    // src, dst, tag, sequence
  std::map<P2PKey, double> sent;                              // send start
  std::map<P2PKey, std::pair<int, uint32_t>> posted;          // recv waiting for its send

  TimelineResult result;
  if (record_ops) {
    result.op_start.resize(R);
    result.op_end.resize(R);
    for (int r = 0; r < R; ++r) {
      result.op_start[r].assign(job.ranks[r].program->ops.size(), -1.0);
      result.op_end[r].assign(job.ranks[r].program->ops.size(), -1.0);
    }
  }
  auto finish = [&](int r, uint32_t i, double start, double stop) {
    end[r][i] = stop;
    if (record_ops) {
      result.op_start[r][i] = start;
      result.op_end[r][i] = stop;
    }
    ++done_count[r];
    const Graph& g = graphs.at(job.ranks[r].program.get());
    for (uint32_t s : g.successors[i]) {
      ready_at[r][s] = std::max(ready_at[r][s], stop);
      if (--remaining[r][s] == 0) ready.emplace_back(r, s);
    }
  };

  while (!ready.empty()) {
    const auto [r, i] = ready.front();
    ready.pop_front();
    const Rank& rank = job.ranks[r];
    const Op& op = rank.program->ops[i];
    const double t = ready_at[r][i];
    switch (op.kind) {
      case OpKind::Compute:
      case OpKind::MemCopy:
        finish(r, i, t, t + duration(job, rank, op));
        break;
      case OpKind::Collective: {
        const int comm = rank.communicators[op.slot];
        Waiting& w = collectives[{comm, sequence[r][i]}];
        w.arrived++;
        w.ready = std::max(w.ready, t);
        w.members.emplace_back(r, i);
        if (w.arrived == static_cast<int>(job.communicators[comm].ranks.size())) {
          const double cost = duration(job, rank, op);
          const double start = w.ready;
          const auto members = std::move(w.members);
          collectives.erase({comm, sequence[r][i]});
          for (const auto& [mr, mi] : members) finish(mr, mi, start, start + cost);
        }
        break;
      }
      case OpKind::Send: {
        const int dst = rank.peers[op.slot];
        const P2PKey key{r, dst, op.tag, sequence[r][i]};
        sent[key] = t;
        finish(r, i, t, t + duration(job, rank, op));
        auto it = posted.find(key);
        if (it != posted.end()) {
          const auto [rr, ri] = it->second;
          posted.erase(it);
          const Rank& receiver = job.ranks[rr];
          finish(rr, ri, ready_at[rr][ri],
                 std::max(ready_at[rr][ri], t + duration(job, receiver, receiver.program->ops[ri])));
        }
        break;
      }
      case OpKind::Recv: {
        const int src = rank.peers[op.slot];
        const P2PKey key{src, r, op.tag, sequence[r][i]};
        auto it = sent.find(key);
        if (it != sent.end()) finish(r, i, t, std::max(t, it->second + duration(job, rank, op)));
        else posted[key] = {r, i};
        break;
      }
    }
  }

  result.finish.assign(R, 0.0);
  result.completed = true;
  std::string stuck;
  int stuck_ranks = 0;
  for (int r = 0; r < R; ++r) {
    const auto& ops = job.ranks[r].program->ops;
    for (double e : end[r]) result.finish[r] = std::max(result.finish[r], e);
    result.makespan = std::max(result.makespan, result.finish[r]);
    if (done_count[r] == ops.size()) continue;
    result.completed = false;
    if (++stuck_ranks > 8) continue;
    // The first unfinished op of each stream is what the rank is stuck on.
    std::string line = "rank " + std::to_string(r) + ":";
    std::vector<bool> seen(job.stream_names.size(), false);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (end[r][i] >= 0 || seen[ops[i].stream]) continue;
      seen[ops[i].stream] = true;
      line += " [" + job.stream_names[ops[i].stream] + "] op " + std::to_string(i) + " " +
              to_string(ops[i].kind) + " " + job.op_name(ops[i]);
    }
    stuck += (stuck.empty() ? "" : "; ") + line;
  }
  if (!result.completed)
    result.deadlock = std::to_string(stuck_ranks) + " rank(s) cannot finish: " + stuck;
  return result;
}

}  // namespace tessera::workloads
