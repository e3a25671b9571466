#include "models/gpu/program_graph.h"

#include <algorithm>
#include <unordered_map>

namespace tessera::models {

ProgramGraph::ProgramGraph(const workloads::Program& program) {
  const auto& ops = program.ops;
  const size_t n = ops.size();
  waits.assign(n, 0);
  // Edges (from -> to), deduplicated per target: the stream predecessor may also be listed.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::unordered_map<uint16_t, uint32_t> last_on_stream;
  std::vector<uint32_t> preds;
  for (uint32_t i = 0; i < n; ++i) {
    preds.assign(ops[i].deps.begin(), ops[i].deps.end());
    auto it = last_on_stream.find(ops[i].stream);
    if (it != last_on_stream.end()) preds.push_back(it->second);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (uint32_t p : preds) edges.emplace_back(p, i);
    waits[i] = static_cast<uint32_t>(preds.size());
    last_on_stream[ops[i].stream] = i;
  }
  successor_begin.assign(n + 1, 0);
  for (const auto& e : edges) ++successor_begin[e.first + 1];
  for (size_t i = 0; i < n; ++i) successor_begin[i + 1] += successor_begin[i];
  successors.resize(edges.size());
  std::vector<uint32_t> fill(successor_begin.begin(), successor_begin.end() - 1);
  for (const auto& e : edges) successors[fill[e.first]++] = e.second;
}

}  // namespace tessera::models
