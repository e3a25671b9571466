#include "models/gpu/program_graph.h"

#include <algorithm>
#include <limits>

namespace tessera::models {
namespace {

// Collectives' call numbers, counted per key in program order.
class CallNumbers {
 public:
  uint32_t next(size_t key) {
    if (key >= next_.size()) next_.resize(key + 1, 0);
    return next_[key]++;
  }

 private:
  std::vector<uint32_t> next_;  // by key
};

}  // namespace

ProgramGraph::ProgramGraph(const workloads::Program& program) {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  const auto& ops = program.ops;
  const size_t n = ops.size();
  waits.assign(n, 0);
  // Each op's predecessors, deduplicated (the stream predecessor may also be listed), in one
  // array: the edges (from -> to) ordered by `to`.
  std::vector<uint32_t> from;
  from.reserve(n + n / 2);
  std::vector<uint32_t> last_on_stream;
  successor_begin.assign(n + 1, 0);
  calls.assign(n, kNoCall);
  CallNumbers numbers;
  for (uint32_t i = 0; i < n; ++i) {
    if (ops[i].kind == workloads::OpKind::Collective) calls[i] = numbers.next(size_t(ops[i].slot));
    const size_t first = from.size();
    from.insert(from.end(), ops[i].deps.begin(), ops[i].deps.end());
    const uint16_t stream = ops[i].stream;
    if (stream >= last_on_stream.size()) last_on_stream.resize(size_t(stream) + 1, kNone);
    if (last_on_stream[stream] != kNone) from.push_back(last_on_stream[stream]);
    if (from.size() - first > 1) {
      std::sort(from.begin() + first, from.end());
      from.erase(std::unique(from.begin() + first, from.end()), from.end());
    }
    waits[i] = static_cast<uint32_t>(from.size() - first);
    for (size_t e = first; e < from.size(); ++e) ++successor_begin[from[e] + 1];
    last_on_stream[stream] = i;
  }
  for (size_t i = 0; i < n; ++i) successor_begin[i + 1] += successor_begin[i];
  successors.resize(from.size());
  std::vector<uint32_t> fill(successor_begin.begin(), successor_begin.end() - 1);
  size_t e = 0;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < waits[i]; ++k) successors[fill[from[e++]]++] = i;
}

std::vector<uint32_t> number_calls(const workloads::Program& program, const std::vector<int>& key_of_slot) {
  std::vector<uint32_t> calls(program.ops.size(), kNoCall);
  CallNumbers numbers;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const workloads::Op& op = program.ops[i];
    if (op.kind != workloads::OpKind::Collective) continue;
    calls[i] = numbers.next(key_of_slot.empty() ? size_t(op.slot) : size_t(key_of_slot[size_t(op.slot)]));
  }
  return calls;
}

const std::vector<uint32_t>& rank_calls(const workloads::Rank& rank, const ProgramGraph& graph,
                                        std::vector<uint32_t>& own) {
  std::vector<int> communicators = rank.communicators;
  std::sort(communicators.begin(), communicators.end());
  if (std::adjacent_find(communicators.begin(), communicators.end()) == communicators.end()) return graph.calls;
  own = number_calls(*rank.program, rank.communicators);
  return own;
}

}  // namespace tessera::models
