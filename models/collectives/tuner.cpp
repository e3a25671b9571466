#include "models/collectives/tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace tessera::models {

namespace {
constexpr CollectiveAlgorithm kAlgorithms[] = {
    CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::Direct,
    CollectiveAlgorithm::HalvingDoubling, CollectiveAlgorithm::Hierarchical,
    CollectiveAlgorithm::Nvls, CollectiveAlgorithm::CollNet};
constexpr CollectiveProtocol kProtocols[] = {CollectiveProtocol::Simple, CollectiveProtocol::LL,
                                             CollectiveProtocol::LL128};
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
int log2i(int n) {
  int l = 0;
  while ((1 << (l + 1)) <= n) ++l;
  return l;
}
bool reduces(CollectiveOp op) {
  return op == CollectiveOp::AllReduce || op == CollectiveOp::Barrier;
}
bool ring_family(CollectiveOp op) {
  return reduces(op) || op == CollectiveOp::ReduceScatter || op == CollectiveOp::AllGather;
}
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

const char* algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::Automatic: return "auto";
    case CollectiveAlgorithm::Ring: return "ring";
    case CollectiveAlgorithm::Tree: return "tree";
    case CollectiveAlgorithm::Direct: return "direct";
    case CollectiveAlgorithm::HalvingDoubling: return "halving-doubling";
    case CollectiveAlgorithm::Hierarchical: return "hierarchical";
    case CollectiveAlgorithm::Nvls: return "nvls";
    case CollectiveAlgorithm::CollNet: return "collnet";
  }
  return "?";
}

const char* protocol_name(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::Automatic: return "auto";
    case CollectiveProtocol::Simple: return "simple";
    case CollectiveProtocol::LL: return "ll";
    case CollectiveProtocol::LL128: return "ll128";
  }
  return "?";
}

const char* op_name(CollectiveOp kind) {
  switch (kind) {
    case CollectiveOp::AllReduce: return "allreduce";
    case CollectiveOp::ReduceScatter: return "reducescatter";
    case CollectiveOp::AllGather: return "allgather";
    case CollectiveOp::AllToAll: return "alltoall";
    case CollectiveOp::AllToAllV: return "alltoallv";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Barrier: return "barrier";
    case CollectiveOp::Send: return "send";
    case CollectiveOp::Recv: return "recv";
  }
  return "?";
}

bool parse_algorithm(const std::string& name, CollectiveAlgorithm& out) {
  const std::string n = lower(name);
  if (n == "auto" || n == "automatic" || n.empty()) return out = CollectiveAlgorithm::Automatic, true;
  if (n == "hd" || n == "halving_doubling" || n == "rabenseifner") return out = CollectiveAlgorithm::HalvingDoubling, true;
  if (n == "nvlink-sharp" || n == "in-switch") return out = CollectiveAlgorithm::Nvls, true;
  if (n == "sharp" || n == "ib-sharp" || n == "collnet-direct" || n == "in-network")
    return out = CollectiveAlgorithm::CollNet, true;
  for (CollectiveAlgorithm a : kAlgorithms)
    if (n == algorithm_name(a)) return out = a, true;
  return false;
}

bool parse_protocol(const std::string& name, CollectiveProtocol& out) {
  const std::string n = lower(name);
  if (n == "auto" || n == "automatic" || n.empty()) return out = CollectiveProtocol::Automatic, true;
  for (CollectiveProtocol p : kProtocols)
    if (n == protocol_name(p)) return out = p, true;
  return false;
}

bool parse_algorithm_choice(const std::string& text, CollectiveAlgorithm& algorithm,
                            CollectiveProtocol& protocol) {
  const auto slash = text.find('/');
  protocol = CollectiveProtocol::Automatic;
  if (!parse_algorithm(text.substr(0, slash), algorithm)) return false;
  return slash == std::string::npos || parse_protocol(text.substr(slash + 1), protocol);
}

CollectiveOp collective_op(workloads::CollectiveKind kind) {
  switch (kind) {
    case workloads::CollectiveKind::AllReduce: return CollectiveOp::AllReduce;
    case workloads::CollectiveKind::ReduceScatter: return CollectiveOp::ReduceScatter;
    case workloads::CollectiveKind::AllGather: return CollectiveOp::AllGather;
    case workloads::CollectiveKind::AllToAll: return CollectiveOp::AllToAll;
    case workloads::CollectiveKind::AllToAllV: return CollectiveOp::AllToAllV;
    case workloads::CollectiveKind::Broadcast: return CollectiveOp::Broadcast;
    case workloads::CollectiveKind::Reduce: return CollectiveOp::Reduce;
    case workloads::CollectiveKind::Barrier: return CollectiveOp::Barrier;
  }
  return CollectiveOp::AllReduce;
}

CommunicatorShape communicator_shape(const std::vector<int>& ranks, int gpus_per_node,
                                     const std::vector<int>& dimensions) {
  CommunicatorShape s;
  s.ranks = static_cast<int>(ranks.size());
  std::unordered_map<int, int> members;  // by node
  for (int r : ranks) ++members[gpus_per_node > 0 ? r / gpus_per_node : 0];
  s.nodes = std::max<int>(1, static_cast<int>(members.size()));
  const int first = members.empty() ? 0 : members.begin()->second;
  const bool uniform = std::all_of(members.begin(), members.end(),
                                   [&](const std::pair<const int, int>& m) { return m.second == first; });
  if (uniform) s.gpus_per_node = first;
  if (!dimensions.empty()) s.dimensions = dimensions;
  else if (uniform && first > 0) s.dimensions = {first, s.nodes};
  return s;
}

void binary_tree(int n, int r, int& parent, int& child0, int& child1) {
  parent = child0 = child1 = -1;
  if (n <= 1) return;
  if (r == 0) {  // the root has one child: the largest power of two below n
    child1 = 1 << log2i(n - 1);
    return;
  }
  const int bit = r & -r;
  // The two neighbours one level up; the parent is the odd multiple of 2*bit, unless it lies
  // past the end.
  const int below = r - bit, above = r + bit;
  const bool above_preferred = (above & (2 * bit)) != 0;
  parent = above_preferred ? (above < n ? above : below) : below;
  if (bit > 1) {
    child0 = r - bit / 2;
    int h = bit / 2;
    while (h >= 1 && r + h >= n) h /= 2;
    child1 = h >= 1 ? r + h : -1;
  }
}

int binary_tree_depth(int n) {
  int depth = 0;
  for (int r = 0; r < n; ++r) {
    int d = 0, p = r, c0, c1;
    while (p > 0) {
      binary_tree(n, p, p, c0, c1);
      ++d;
    }
    depth = std::max(depth, d);
  }
  return depth;
}

int Tuner::steps(CollectiveOp op, CollectiveAlgorithm a, const CommunicatorShape& s) {
  const int n = s.ranks;
  if (n <= 1) return 0;
  const int twice = reduces(op) ? 2 : 1;
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring:
      return ring_family(op) ? twice * (n - 1) : (op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? n - 1 : 1);
    case CollectiveAlgorithm::Tree: {
      const int local = (n + s.nodes - 1) / s.nodes;
      return twice * ((local - 1) + binary_tree_depth(s.nodes));
    }
    case CollectiveAlgorithm::Direct: return twice;
    case CollectiveAlgorithm::HalvingDoubling: return twice * log2i(n);
    case CollectiveAlgorithm::Hierarchical: {
      int sum = 0;
      for (int d : s.dimensions) sum += d - 1;
      return twice * sum;
    }
    case CollectiveAlgorithm::Nvls: return twice;
    case CollectiveAlgorithm::CollNet: return (s.gpus_per_node > 1 ? 2 : 0) + 1;
  }
  return 0;
}

int Tuner::network_steps(CollectiveOp, CollectiveAlgorithm a, const CommunicatorShape& s) {
  if (s.ranks <= 1) return 0;
  // The round trip through the aggregation tree.
  return a == CollectiveAlgorithm::CollNet ? 1 : 0;
}

double Tuner::wire_bytes(CollectiveOp op, CollectiveAlgorithm a, uint64_t bytes,
                         const CommunicatorShape& s) const {
  const double n = s.ranks, S = double(bytes);
  if (n <= 1) return 0;
  const double shard = (n - 1) / n * S;
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring:
    case CollectiveAlgorithm::HalvingDoubling:
      if (reduces(op)) return 2 * shard;
      return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? S : shard;
    case CollectiveAlgorithm::Tree:
      // Each tree carries half; a chain member sends its half up and down in both trees; a
      // node head in the tree across nodes sends to up to two more children.
      if (reduces(op)) return s.nodes > 1 ? 3 * S : 2 * S;
      return s.nodes > 1 ? 3 * S : S;
    case CollectiveAlgorithm::Direct:
      if (reduces(op)) return 2 * shard;
      return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? (n - 1) * S : shard;
    case CollectiveAlgorithm::Hierarchical: {
      double total = 0, data = S;
      for (int d : s.dimensions) {
        total += double(d - 1) / d * data;
        data /= d;
      }
      return reduces(op) ? 2 * total : total;
    }
    case CollectiveAlgorithm::Nvls:
      // All-reduce: every shard goes up once (S) and its owner's sum comes back (S/n), the
      // owner multicasts its shard (S/n up) and every shard comes down (S).
      return reduces(op) ? (1 + 1 / n) * S : S;
    case CollectiveAlgorithm::CollNet: {
      // Inside the node: NVLS where the switches reduce ((1 + 1/g) S, at the switch's
      // efficiency), else a direct reduce-scatter and all-gather (2 (g-1)/g S).
      const double g = std::max(1, s.gpus_per_node);
      if (fabric_.in_switch_reduction && g > 1)
        return (1 + 1 / g) * S * wire_factor(CollectiveAlgorithm::Nvls, CollectiveProtocol::Simple);
      return 2 * (g - 1) / g * S;
    }
  }
  return 0;
}

std::string Tuner::unsupported(CollectiveOp op, CollectiveAlgorithm a, CollectiveProtocol p,
                               const CommunicatorShape& s) const {
  const std::string what = std::string(algorithm_name(a)) + " " + op_name(op);
  if (op == CollectiveOp::Send || op == CollectiveOp::Recv) return "send/recv has no algorithm";
  if (s.ranks <= 1) return "";
  const bool a2a = op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV;
  const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  switch (a) {
    case CollectiveAlgorithm::Automatic: return "";
    case CollectiveAlgorithm::Ring:
      if (a2a) return what + ": all-to-all runs direct only";
      break;
    case CollectiveAlgorithm::Tree:
      if (!reduces(op) && !rooted) return what + ": tree runs all-reduce, broadcast and reduce";
      break;
    case CollectiveAlgorithm::Direct: break;
    case CollectiveAlgorithm::HalvingDoubling:
      if (!ring_family(op)) return what + ": halving-doubling runs all-reduce, reduce-scatter and all-gather";
      if (!power_of_two(s.ranks))
        return what + ": halving-doubling needs a power-of-two rank count, got " + std::to_string(s.ranks);
      break;
    case CollectiveAlgorithm::Hierarchical: {
      if (!ring_family(op)) return what + ": hierarchical runs all-reduce, reduce-scatter and all-gather";
      int product = 1, real = 0;
      for (int d : s.dimensions) product *= d, real += d > 1;
      if (product != s.ranks || real < 2)
        return what + ": hierarchical needs at least two dimensions (gpus_per_node dividing the " +
               std::to_string(s.ranks) + " ranks, or explicit dimensions)";
      break;
    }
    case CollectiveAlgorithm::Nvls:
      if (!fabric_.in_switch_reduction) return what + ": the switches have no in-switch reduction (NVLink SHARP)";
      if (!ring_family(op)) return what + ": NVLS runs all-reduce, reduce-scatter and all-gather";
      if (s.nodes > 1) return what + ": NVLS needs every member in one NVLink domain";
      if (p != CollectiveProtocol::Simple && p != CollectiveProtocol::Automatic)
        return what + ": NVLS runs the simple protocol only";
      break;
    case CollectiveAlgorithm::CollNet:
      if (!fabric_.in_network_reduction)
        return what + ": the network switches have no in-network reduction (InfiniBand SHARP: "
                      "network.in_network_reduction on a network of NICs)";
      if (!reduces(op)) return what + ": collnet runs all-reduce only";
      if (s.nodes < 2 || s.gpus_per_node <= 0)
        return what + ": collnet needs members on two or more nodes, as many on each";
      if (p != CollectiveProtocol::Simple && p != CollectiveProtocol::Automatic)
        return what + ": collnet runs the simple protocol only";
      break;
  }
  return "";
}

ProtocolCost Tuner::cost(CollectiveAlgorithm a, CollectiveProtocol p) const {
  const int i = p == CollectiveProtocol::LL ? 1 : p == CollectiveProtocol::LL128 ? 2 : 0;
  if (a == CollectiveAlgorithm::Nvls) return config_.nvls;
  // NVLS inside the node with SHARP across is NCCL's multi-node NVLS.
  if (a == CollectiveAlgorithm::CollNet) return fabric_.in_switch_reduction ? config_.nvls : config_.collnet;
  if (a == CollectiveAlgorithm::Tree) return config_.tree[i];
  // Direct, halving-doubling and hierarchical steps are ring-like point-to-point steps.
  return config_.ring[i];
}

double Tuner::wire_factor(CollectiveAlgorithm a, CollectiveProtocol p) const {
  if (a == CollectiveAlgorithm::Nvls) return 1.0 / config_.nvls_efficiency;
  if (p == CollectiveProtocol::LL) return 2.0;            // 4 data + 4 flag bytes per 8-byte line
  if (p == CollectiveProtocol::LL128) return 128.0 / 120.0;  // 8 flag bytes per 128-byte line
  return 1.0;
}

int Tuner::channels(uint64_t bytes) const {
  const uint64_t c = (bytes + config_.bytes_per_channel - 1) / config_.bytes_per_channel;
  return static_cast<int>(std::clamp<uint64_t>(c, 1, uint64_t(std::max(1, config_.max_channels))));
}

double Tuner::predict(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s,
                      CollectiveAlgorithm a, CollectiveProtocol p) const {
  const ProtocolCost c = cost(a, p);
  const double bandwidth = fabric_.gpu_bandwidth > 0 ? fabric_.gpu_bandwidth : 1e12;
  const int network = network_steps(op, a, s);
  return (c.launch_us + (steps(op, a, s) - network) * c.step_us + network * c.network_step_us) * 1e-6 +
         wire_bytes(op, a, bytes, s) * wire_factor(a, p) / bandwidth;
}

Choice Tuner::choose(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s,
                     CollectiveAlgorithm algorithm, CollectiveProtocol protocol) const {
  Choice best;
  best.channels = channels(bytes);
  if (s.ranks <= 1) return best;
  const bool a2a = op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV;
  std::vector<CollectiveAlgorithm> algorithms;
  if (algorithm != CollectiveAlgorithm::Automatic) {
    const std::string why = unsupported(op, algorithm, protocol, s);
    if (!why.empty()) throw std::invalid_argument(why);
    algorithms.push_back(algorithm);
  } else if (a2a) {
    algorithms = {CollectiveAlgorithm::Direct};
  } else {
    // NCCL's own choices: ring and tree everywhere, NVLS where the switches reduce, the
    // hierarchical form across nodes, and CollNet where the network switches reduce.
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
                                  CollectiveAlgorithm::Nvls, CollectiveAlgorithm::Hierarchical,
                                  CollectiveAlgorithm::CollNet}) {
      if ((a == CollectiveAlgorithm::Hierarchical || a == CollectiveAlgorithm::CollNet) && s.nodes <= 1) continue;
      if (unsupported(op, a, protocol, s).empty()) algorithms.push_back(a);
    }
  }
  double best_time = std::numeric_limits<double>::infinity();
  for (CollectiveAlgorithm a : algorithms)
    for (CollectiveProtocol p : kProtocols) {
      if (protocol != CollectiveProtocol::Automatic && p != protocol) continue;
      if ((a == CollectiveAlgorithm::Nvls || a == CollectiveAlgorithm::CollNet) && p != CollectiveProtocol::Simple)
        continue;
      const double t = predict(op, bytes, s, a, p);
      if (t < best_time) {
        best_time = t;
        best.algorithm = a;
        best.protocol = p;
      }
    }
  if (!std::isfinite(best_time))
    throw std::invalid_argument(std::string(op_name(op)) + " cannot run with protocol " +
                                protocol_name(protocol));
  best.predicted_s = best_time;
  return best;
}

}  // namespace tessera::models
