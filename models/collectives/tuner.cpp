#include "models/collectives/tuner.h"

#include "models/collectives/schedule.h"  // ceil_div

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
    CollectiveAlgorithm::Nvls, CollectiveAlgorithm::CollNet, CollectiveAlgorithm::NvlsTree};
constexpr CollectiveProtocol kProtocols[] = {CollectiveProtocol::Simple, CollectiveProtocol::LL,
                                             CollectiveProtocol::LL128};
// LL128's payload per byte on the wire: 120 data bytes and 8 flag bytes per 128-byte line.
constexpr double kLl128Payload = 120.0 / 128.0;
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
// Members per node as the algorithms group them.
int members_per_node(const CommunicatorShape& s) {
  return s.gpus_per_node > 0 ? s.gpus_per_node : std::max(1, (s.ranks + s.nodes - 1) / s.nodes);
}
// Most edges (parent and children) of one node of NCCL's binary tree over `nodes`.
int tree_degree(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : nodes == 3 ? 2 : 3; }
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
    case CollectiveAlgorithm::NvlsTree: return "nvls_tree";
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
  if (n == "nvlstree" || n == "nvls-tree") return out = CollectiveAlgorithm::NvlsTree, true;
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

void op_algorithm_choice(const workloads::Job& job, const workloads::Op& op, CollectiveAlgorithm& algorithm,
                         CollectiveProtocol& protocol) {
  algorithm = CollectiveAlgorithm::Automatic;
  protocol = CollectiveProtocol::Automatic;
  if (op.algorithm == 0 || parse_algorithm_choice(job.names[op.algorithm], algorithm, protocol)) return;
  throw std::invalid_argument("op '" + job.op_name(op) + "' names an unknown collective algorithm '" +
                              job.names[op.algorithm] + "'");
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
                                     const std::vector<int>& dimensions, int platform_gpus_per_node) {
  CommunicatorShape s;
  s.ranks = static_cast<int>(ranks.size());
  std::unordered_map<int, int> members;  // by node
  for (int r : ranks) ++members[gpus_per_node > 0 ? r / gpus_per_node : 0];
  if (platform_gpus_per_node <= 0 || platform_gpus_per_node == gpus_per_node) {
    s.network_nodes = static_cast<int>(members.size());
  } else {
    std::unordered_map<int, int> nodes;
    for (int r : ranks) ++nodes[r / platform_gpus_per_node];
    s.network_nodes = static_cast<int>(nodes.size());
  }
  s.network_nodes = std::max(1, s.network_nodes);
  s.nodes = std::max<int>(1, static_cast<int>(members.size()));
  const int first = members.empty() ? 0 : members.begin()->second;
  const bool uniform = std::all_of(members.begin(), members.end(),
                                   [&](const std::pair<const int, int>& m) { return m.second == first; });
  if (uniform) s.gpus_per_node = first;
  if (uniform && first > 0) {
    s.node_blocks = true;
    for (size_t i = 0; i < ranks.size() && s.node_blocks; ++i) {
      const size_t block = i - i % size_t(first);
      s.node_blocks = gpus_per_node <= 0 || ranks[i] / gpus_per_node == ranks[block] / gpus_per_node;
    }
  }
  s.dimensions_given = !dimensions.empty();
  if (!dimensions.empty()) s.dimensions = dimensions;
  else if (uniform && first > 0) s.dimensions = {first, s.nodes};
  return s;
}

std::vector<RingChannels> ring_channels(const CommunicatorShape& shape, int p, int channels, int max_rings) {
  const int n = shape.ranks, C = std::max(1, channels), g = shape.gpus_per_node;
  if (shape.network_nodes <= 1 || shape.nodes <= 1 || !shape.node_blocks || g <= 1 || max_rings <= 1)
    return {RingChannels{(p + 1) % n, (p + n - 1) % n, 0, 1, C}};
  const int blocks = n / g, block = p / g, member = p % g, rings = std::min({C, g, max_rings});
  std::vector<RingChannels> out(static_cast<size_t>(rings));
  for (int r = 0; r < rings; ++r) {
    // Ring r enters each node at member r; forwards (r, r+1, .., r-1) or backwards
    // (r, r-1, .., r+1).
    const bool forwards = g % 2 == 1 || r % 2 == 1;
    const int place = forwards ? (member - r + g) % g : (r - member + g) % g;
    auto at = [&](int b, int k) {
      const int local = forwards ? (r + k) % g : (r - k + g) % g;
      return ((b % blocks + blocks) % blocks) * g + local;
    };
    RingChannels& ring = out[size_t(r)];
    ring.next = place + 1 < g ? at(block, place + 1) : at(block + 1, 0);
    ring.previous = place > 0 ? at(block, place - 1) : at(block - 1, g - 1);
    ring.first_channel = r;
    ring.stride = rings;
    ring.channels = (C - r + rings - 1) / rings;
  }
  return out;
}

uint64_t chunk_size(uint64_t bytes, uint64_t chunk_bytes, int channels) {
  const uint64_t c = std::max<uint64_t>(1, uint64_t(std::max(1, channels)));
  const uint64_t spread = std::min<uint64_t>(chunk_bytes, (bytes + c - 1) / c);
  return std::max<uint64_t>({spread, 1, (bytes + kMaxChunksPerTransfer - 1) / kMaxChunksPerTransfer});
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
  // Every rank of a call asks for its communicator's count: the last answer is kept.
  thread_local int last_n = -1, last_depth = 0;
  if (n == last_n) return last_depth;
  int depth = 0;
  for (int r = 1; r < n; r += 2) {  // a rank with children has a deeper one below it (child0)
    int d = 0, p = r, c0, c1;
    while (p > 0) {
      binary_tree(n, p, p, c0, c1);
      ++d;
    }
    depth = std::max(depth, d);
  }
  last_n = n;
  last_depth = depth;
  return depth;
}

namespace {

// Steps of the hierarchical schedule in dimension `i` of `s`: a ring's d - 1, or the levels of
// the tree across nodes in the outermost dimension (`tree`: Tuner::tree_across_nodes).
int hierarchical_steps(const CommunicatorShape& s, size_t i, bool tree) {
  const int d = s.dimensions[i];
  return tree && i + 1 == s.dimensions.size() ? binary_tree_depth(d) : d - 1;
}

}  // namespace

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
      // A ring's d - 1 steps per dimension; the tree across nodes its levels.
      const bool tree = tree_across_nodes(op, s);
      int sum = 0;
      for (size_t i = 0; i < s.dimensions.size(); ++i) sum += hierarchical_steps(s, i, tree);
      return twice * sum;
    }
    case CollectiveAlgorithm::Nvls: return twice;
    case CollectiveAlgorithm::CollNet: return (s.gpus_per_node > 1 ? 2 : 0) + 1;
    // Into the switch and back out, and the tree's levels up and down.
    case CollectiveAlgorithm::NvlsTree: return 2 + 2 * binary_tree_depth(s.nodes);
  }
  return 0;
}

int Tuner::network_steps(CollectiveOp op, CollectiveAlgorithm a, const CommunicatorShape& s) {
  if (s.ranks <= 1) return 0;
  if (a == CollectiveAlgorithm::CollNet) return 1;  // the round trip through the aggregation tree
  if (s.nodes <= 1) return 0;
  const int twice = reduces(op) ? 2 : 1;
  const int g = members_per_node(s);
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring: {
      if (!ring_family(op)) return s.nodes - 1;  // the chain enters each next node once
      // The data moves one rank per step and into the next node every g ranks (NCCL counts
      // 2 nodes network steps for an all-reduce).
      const int k = steps(op, a, s);
      return std::min(k, (k + g - 1) / g);
    }
    case CollectiveAlgorithm::Tree: return twice * binary_tree_depth(s.nodes);
    case CollectiveAlgorithm::Direct: return steps(op, a, s);
    case CollectiveAlgorithm::HalvingDoubling: {
      int remote = 0;
      for (int k = 0; (1 << (k + 1)) <= s.ranks; ++k) remote += (s.ranks >> (k + 1)) >= g;
      return twice * remote;
    }
    case CollectiveAlgorithm::Hierarchical: {
      const bool tree = tree_across_nodes(op, s);
      int sum = 0, stride = 1;
      for (size_t i = 0; i < s.dimensions.size(); ++i) {
        if (stride >= g) sum += hierarchical_steps(s, i, tree);
        stride *= s.dimensions[i];
      }
      return twice * sum;
    }
    case CollectiveAlgorithm::NvlsTree: return 2 * binary_tree_depth(s.nodes);
    case CollectiveAlgorithm::Nvls:
    case CollectiveAlgorithm::CollNet: return 0;
  }
  return 0;
}

bool Tuner::tree_across_nodes(CollectiveOp op, const CommunicatorShape& s) {
  const std::vector<int>& dims = s.dimensions;
  if (!reduces(op) || dims.size() < 2 || dims.back() < 2 || s.nodes <= 1 || s.network_nodes <= 1) return false;
  int inner = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) inner *= dims[i];
  return inner >= members_per_node(s);
}

CollectiveLoad Tuner::load(CollectiveOp op, CollectiveAlgorithm a, uint64_t bytes,
                           const CommunicatorShape& s) const {
  CollectiveLoad l;
  const double n = s.ranks, S = double(bytes);
  if (s.ranks <= 1) return l;
  const double g = members_per_node(s), N = s.nodes;
  const double twice = reduces(op) ? 2 : 1;
  const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  const bool a2a = op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV;
  // Traffic between the communicator's nodes leaves NVLink for the network only where they are
  // the platform's nodes (else they are groups of one NVLink domain).
  const bool across = s.network_nodes > 1 && s.nodes > 1;
  // Bytes a GPU sends inside its node and into the network; a node sends g GPUs' worth.
  auto split = [&](double local, double remote) {
    if (!across) local += remote, remote = 0;
    l.nvlink = local;
    l.gpu_network = remote;
    l.node_network = g * remote;
  };
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring: {
      // Each GPU sends the same; every ring crosses into the next node once, so the node
      // sends all of it into the network: through one GPU (one ring), or spread over the g
      // GPUs where each channel has its own ring (ring_channels).
      const double sent = reduces(op) ? 2 * (n - 1) / n * S : rooted ? S : (n - 1) / n * S;
      l.nvlink = sent;
      if (across) {
        l.node_network = sent;
        const bool spread = !rooted && s.node_blocks && g > 1;
        l.gpu_network = spread ? sent / g : sent;
      }
      break;
    }
    case CollectiveAlgorithm::HalvingDoubling: {
      // Level k exchanges S / 2^(k+1) with the partner n / 2^(k+1) ranks away, in another node
      // once that is at least a node's worth of ranks.
      double local = 0, remote = 0;
      for (int k = 0; (1 << (k + 1)) <= s.ranks; ++k)
        ((s.ranks >> (k + 1)) >= g && N > 1 ? remote : local) += S / double(1 << (k + 1));
      split(twice * local, twice * remote);
      break;
    }
    case CollectiveAlgorithm::Direct:
      // One shard (S/n) to every peer, g - 1 of them in the node; rooted: the root sends (or
      // receives) all of S to (from) each.
      if (rooted) {
        split((g - 1) * S, (n - g) * S);
        if (op == CollectiveOp::Broadcast) l.node_network = l.gpu_network;
      } else {
        split((a2a ? 1 : twice) * (g - 1) / n * S, (a2a ? 1 : twice) * (n - g) / n * S);
      }
      break;
    case CollectiveAlgorithm::Tree: {
      if (!across) {
        // Each tree carries half; a chain member sends its half up and down in both trees; a
        // node head in the tree across nodes sends to up to two more children.
        if (reduces(op)) l.nvlink = s.nodes > 1 ? 3 * S : 2 * S;
        else l.nvlink = s.nodes > 1 ? 3 * S : S;
        break;
      }
      // The chain in the node: half up and down in both trees. Across nodes a node head sends
      // its half to its parent and children: up to three edges in one tree, and (the trees
      // being complementary) one in the other, which has another head unless g = 1.
      const double degree = tree_degree(s.nodes);
      if (reduces(op)) {
        l.nvlink = 2 * S;
        l.node_network = s.nodes == 2 ? S : (degree + 1) * S / 2;
        l.gpu_network = g > 1 ? degree * S / 2 : l.node_network;
      } else {
        l.nvlink = S;
        l.gpu_network = l.node_network = op == CollectiveOp::Broadcast ? std::min(2.0, N - 1) * S : S;
      }
      break;
    }
    case CollectiveAlgorithm::Hierarchical: {
      // A ring per dimension on the data left; the dimensions from a node's worth of ranks on
      // cross the network. The tree across nodes: the busiest member sends each tree's half of
      // its shard over all its edges, up to three in one tree and one in the other (2 (N-1)/N
      // of the shard on a ring, twice the shard on a tree of 4 or more nodes).
      const bool tree = tree_across_nodes(op, s);
      double local = 0, remote = 0, data = S;
      int stride = 1;
      for (size_t i = 0; i < s.dimensions.size(); ++i) {
        const int d = s.dimensions[i];
        const bool levels = tree && i + 1 == s.dimensions.size();
        (stride >= int(g) && N > 1 ? remote : local) +=
            levels ? (tree_degree(d) + 1) * data / 4 : double(d - 1) / d * data;
        data /= d;
        stride *= d;
      }
      split(twice * local, twice * remote);
      break;
    }
    case CollectiveAlgorithm::Nvls:
      // All-reduce: every shard goes up once (S) and its owner's sum comes back (S/n), the
      // owner multicasts its shard (S/n up) and every shard comes down (S).
      l.nvlink = reduces(op) ? (1 + 1 / n) * S : S;
      break;
    case CollectiveAlgorithm::CollNet:
      // Inside the node: NVLS where the switches reduce ((1 + 1/g) S, at the switch's
      // efficiency), else a direct reduce-scatter and all-gather (2 (g-1)/g S). Through the
      // network: each GPU's shard once each way.
      l.nvlink = fabric_.in_switch_reduction && g > 1
                     ? (1 + 1 / g) * S *
                           wire_factor(CollectiveAlgorithm::Nvls, CollectiveProtocol::Simple, uint64_t(S), int(g))
                     : 2 * (g - 1) / g * S;
      l.gpu_network = S / g;
      l.node_network = S;
      break;
    case CollectiveAlgorithm::NvlsTree: {
      // Inside the node NVLS ((1 + 1/g) S at the switch's efficiency); across nodes each GPU's
      // shard on its own NIC, each tree's half up and down its edges: S/g on 2 nodes, twice
      // that on a tree of 4 or more (NCCL: bwInter up to 2 nodes, bwInter / 2 beyond).
      l.nvlink = (1 + 1 / g) * S * nvls_wire_factor(nvls_tree_chunk(uint64_t(S), int(g), int(N)));
      l.gpu_network = (tree_degree(int(N)) + 1) * S / g / 2;
      l.node_network = g * l.gpu_network;
      break;
    }
  }
  return l;
}

double Tuner::network_transfer(CollectiveOp op, CollectiveAlgorithm a, uint64_t bytes,
                               const CommunicatorShape& s) {
  const double S = double(bytes), n = std::max(1, s.ranks);
  const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Ring: return rooted ? S : S / n;
    case CollectiveAlgorithm::Tree: return rooted ? S : S / 2;
    case CollectiveAlgorithm::Direct: return rooted ? S : S / n;
    case CollectiveAlgorithm::HalvingDoubling: return S / 2;  // the first (largest) level
    case CollectiveAlgorithm::Hierarchical: {
      // The ring across nodes works on what the dimensions inside the node left; each tree
      // across nodes on half of a member's shard.
      double data = S;
      for (int d : s.dimensions) data /= d;
      return tree_across_nodes(op, s) ? data * s.dimensions.back() / 2 : data;
    }
    case CollectiveAlgorithm::Nvls: return 0;
    case CollectiveAlgorithm::CollNet: return S / members_per_node(s);
    case CollectiveAlgorithm::NvlsTree: return S / members_per_node(s) / 2;  // a tree's half of a shard
  }
  return 0;
}

// What keeps `a` with `p` from running `op` on `s`, if anything: found without building the
// reason's words, as choose() asks it for every call of a run.
Tuner::Limit Tuner::limit(CollectiveOp op, CollectiveAlgorithm a, CollectiveProtocol p, const CommunicatorShape& s) const {
  if (op == CollectiveOp::Send || op == CollectiveOp::Recv) return Limit::SendRecv;
  if (s.ranks <= 1) return Limit::None;
  const bool a2a = op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV;
  const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  const bool simple = p == CollectiveProtocol::Simple || p == CollectiveProtocol::Automatic;
  switch (a) {
    case CollectiveAlgorithm::Automatic:
    case CollectiveAlgorithm::Direct: return Limit::None;
    case CollectiveAlgorithm::Ring: return a2a ? Limit::DirectOnly : Limit::None;
    case CollectiveAlgorithm::Tree: return !reduces(op) && !rooted ? Limit::Op : Limit::None;
    case CollectiveAlgorithm::HalvingDoubling:
      if (!ring_family(op)) return Limit::Op;
      return power_of_two(s.ranks) ? Limit::None : Limit::Ranks;
    case CollectiveAlgorithm::Hierarchical: {
      if (!ring_family(op)) return Limit::Op;
      int product = 1, real = 0;
      for (int d : s.dimensions) product *= d, real += d > 1;
      return product != s.ranks || real < 2 ? Limit::Ranks : Limit::None;
    }
    case CollectiveAlgorithm::Nvls:
      if (!fabric_.in_switch_reduction) return Limit::Switches;
      if (!ring_family(op)) return Limit::Op;
      if (s.nodes > 1) return Limit::Ranks;
      return simple ? Limit::None : Limit::Protocol;
    case CollectiveAlgorithm::CollNet:
      if (!fabric_.in_network_reduction) return Limit::Switches;
      if (!reduces(op)) return Limit::Op;
      if (s.nodes < 2 || s.gpus_per_node <= 0) return Limit::Ranks;
      return simple ? Limit::None : Limit::Protocol;
    case CollectiveAlgorithm::NvlsTree:
      if (!fabric_.in_switch_reduction) return Limit::Switches;
      if (!reduces(op)) return Limit::Op;
      if (s.nodes < 2 || s.network_nodes < 2 || s.gpus_per_node <= 1) return Limit::Ranks;
      return simple ? Limit::None : Limit::Protocol;
  }
  return Limit::None;
}

std::string Tuner::unsupported(CollectiveOp op, CollectiveAlgorithm a, CollectiveProtocol p,
                               const CommunicatorShape& s) const {
  const Limit l = limit(op, a, p, s);
  if (l == Limit::None) return "";
  if (l == Limit::SendRecv) return "send/recv has no algorithm";
  const std::string what = std::string(algorithm_name(a)) + " " + op_name(op) + ": ";
  if (l == Limit::DirectOnly) return what + "all-to-all runs direct only";
  switch (a) {
    case CollectiveAlgorithm::Tree: return what + "tree runs all-reduce, broadcast and reduce";
    case CollectiveAlgorithm::HalvingDoubling:
      if (l == Limit::Op) return what + "halving-doubling runs all-reduce, reduce-scatter and all-gather";
      return what + "halving-doubling needs a power-of-two rank count, got " + std::to_string(s.ranks);
    case CollectiveAlgorithm::Hierarchical:
      if (l == Limit::Op) return what + "hierarchical runs all-reduce, reduce-scatter and all-gather";
      return what + "hierarchical needs at least two dimensions (gpus_per_node dividing the " +
             std::to_string(s.ranks) + " ranks, or explicit dimensions)";
    case CollectiveAlgorithm::Nvls:
      if (l == Limit::Switches) return what + "the switches have no in-switch reduction (NVLink SHARP)";
      if (l == Limit::Op) return what + "NVLS runs all-reduce, reduce-scatter and all-gather";
      if (l == Limit::Protocol) return what + "NVLS runs the simple protocol only";
      return what + "NVLS needs every member in one NVLink domain";
    case CollectiveAlgorithm::CollNet:
      if (l == Limit::Switches)
        return what + "the network switches have no in-network reduction (InfiniBand SHARP: "
                      "network.in_network_reduction on a network of NICs)";
      if (l == Limit::Op) return what + "collnet runs all-reduce only";
      if (l == Limit::Protocol) return what + "collnet runs the simple protocol only";
      return what + "collnet needs members on two or more nodes, as many on each";
    case CollectiveAlgorithm::NvlsTree:
      if (l == Limit::Switches) return what + "the switches have no in-switch reduction (NVLink SHARP)";
      if (l == Limit::Op) return what + "nvls_tree runs all-reduce only";
      if (l == Limit::Protocol) return what + "nvls_tree runs the simple protocol only";
      return what + "nvls_tree needs two or more members on each of two or more nodes, as many on each";
    default: return what + "not supported";
  }
}

ProtocolCost Tuner::cost(CollectiveAlgorithm a, CollectiveProtocol p) const {
  ProtocolCost c = nccl_cost(a, p);
  if (fabric_.sm_clock_mhz > 0 && config_.reference_clock_mhz > 0) {
    const double slower = config_.reference_clock_mhz / fabric_.sm_clock_mhz;
    c.launch_us *= slower;
    c.step_us *= slower;
  }
  return c;
}

ProtocolCost Tuner::nccl_cost(CollectiveAlgorithm a, CollectiveProtocol p) const {
  const int i = p == CollectiveProtocol::LL ? 1 : p == CollectiveProtocol::LL128 ? 2 : 0;
  if (a == CollectiveAlgorithm::Nvls) return config_.nvls;
  // NVLS inside the node with SHARP across is NCCL's multi-node NVLS.
  if (a == CollectiveAlgorithm::CollNet) return fabric_.in_switch_reduction ? config_.nvls : config_.collnet;
  if (a == CollectiveAlgorithm::NvlsTree) return config_.nvls_tree;
  if (a == CollectiveAlgorithm::Tree) return config_.tree[i];
  // Direct, halving-doubling and hierarchical steps are ring-like point-to-point steps.
  return config_.ring[i];
}

double Tuner::wire_factor(CollectiveAlgorithm a, CollectiveProtocol p, uint64_t bytes, int ranks) const {
  if (a == CollectiveAlgorithm::Nvls) return nvls_wire_factor(nvls_chunk(bytes, ranks));
  if (p == CollectiveProtocol::LL) return 2.0;  // 4 data + 4 flag bytes per 8-byte line
  if (p == CollectiveProtocol::LL128) return 1.0 / kLl128Payload;
  return 1.0;
}

double Tuner::handshake_factor(CollectiveOp op, CollectiveAlgorithm a, CollectiveProtocol p, uint64_t bytes,
                               const CommunicatorShape& s) const {
  if (p != CollectiveProtocol::Simple || fabric_.simple_handshake_s <= 0 || fabric_.gpu_bandwidth <= 0) return 1.0;
  const uint64_t slice = simple_slice(op, a, bytes, s);
  if (slice == 0) return 1.0;
  // Each slice costs its channel the handshake: the bytes its share of the slowest way a GPU
  // sends on (its NVLinks, or its way into the network where the call crosses it) could have
  // moved meanwhile.
  double rate = fabric_.gpu_bandwidth;
  if (s.network_nodes > 1 && fabric_.gpu_network_bandwidth > 0) rate = std::min(rate, fabric_.gpu_network_bandwidth);
  int busy = channels(a, p, bytes, s.ranks);
  if (a == CollectiveAlgorithm::Direct && runs_p2p(op)) p2p_exchange(bytes, s, busy);
  const double h = fabric_.simple_handshake_s * rate / busy;
  return (double(slice) + h) / double(slice);
}

uint64_t Tuner::simple_slice(CollectiveOp op, CollectiveAlgorithm a, uint64_t bytes,
                             const CommunicatorShape& s) const {
  const int C = channels(a, CollectiveProtocol::Simple, bytes, s.ranks);
  if (a == CollectiveAlgorithm::Direct && runs_p2p(op)) {
    // One peer's share on its channels (p2p_plan), in point-to-point chunks.
    int busy = 0;
    return p2p_exchange(bytes, s, busy).slice;
  }
  if (a == CollectiveAlgorithm::Direct) {
    // One peer's share on one channel, in point-to-point chunks.
    const uint64_t lanes = uint64_t(std::max(1, s.ranks)) * uint64_t(C);
    return std::min(config_.p2p_chunk_bytes, std::max<uint64_t>(1, (bytes + lanes - 1) / lanes));
  }
  if (a != CollectiveAlgorithm::Ring) return 0;
  // A ring's chunk is cut in two slices, none smaller than 1/32 of a full one (prims_simple.h).
  const uint64_t chunk = std::max<uint64_t>(1, ring_chunk(op, bytes, s, C));
  return std::max((chunk + 1) / 2, std::min(chunk, config_.simple_chunk_bytes / 2 / 32));
}

double Tuner::nvls_wire_factor(uint64_t chunk_bytes) const {
  // Each chunk a channel moves pays one handshake: h bytes' worth at the channel's rate.
  const double base = 1.0 / config_.nvls_efficiency;
  if (config_.nvls_handshake_us <= 0 || fabric_.gpu_bandwidth <= 0) return base;
  const double per_channel = fabric_.gpu_bandwidth * config_.nvls_efficiency / std::max(1, config_.nvls_channels);
  const double h = config_.nvls_handshake_us * 1e-6 * per_channel;
  const double full = double(config_.nvls_chunk_bytes);
  const double chunk = double(std::max<uint64_t>(1, chunk_bytes));
  // NCCL's efficiency holds at the full chunk (handshakes included).
  return base * (full / (full + h)) * ((chunk + h) / chunk);
}

uint64_t Tuner::nvls_tree_chunk(uint64_t bytes, int heads, int nodes) const {
  uint64_t chunk = std::max<uint64_t>(1, config_.nvls_chunk_bytes);
  if (nodes >= 4) chunk = std::min(chunk, std::max<uint64_t>(1, config_.nvls_tree_max_chunk_bytes));
  const uint64_t concurrent = uint64_t(std::max(1, config_.nvls_channels)) * uint64_t(std::max(1, heads));
  if (bytes < 32 * concurrent * chunk && chunk > 262144) chunk = 262144;
  if (bytes < 16 * concurrent * chunk && chunk > 131072) chunk = 131072;
  if (bytes < 4 * concurrent * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 1 * concurrent * chunk && chunk > 32768) chunk = 32768;
  return chunk;
}

uint64_t Tuner::nvls_chunk(uint64_t bytes, int ranks) const {
  uint64_t chunk = std::max<uint64_t>(1, config_.nvls_chunk_bytes);
  const uint64_t concurrent = uint64_t(std::max(1, config_.nvls_channels)) * uint64_t(std::max(1, ranks));
  if (bytes < 64 * concurrent * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * concurrent * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * concurrent * chunk && chunk > 16384) chunk = 16384;
  return chunk;
}

int Tuner::channels(CollectiveAlgorithm a, CollectiveProtocol p, uint64_t bytes, int ranks) const {
  if (a == CollectiveAlgorithm::Nvls || a == CollectiveAlgorithm::NvlsTree) return std::max(1, config_.nvls_channels);
  uint64_t per_channel = config_.simple_bytes_per_channel;
  if (p == CollectiveProtocol::LL128) per_channel = config_.ll128_bytes_per_channel;
  if (p == CollectiveProtocol::LL)
    per_channel = 512 * config_.ll_bytes_per_thread * (a == CollectiveAlgorithm::Tree ? 1 : uint64_t(std::max(1, ranks)));
  // NCCL drops a channel while bytes < channels x per_channel: the most c with c x per_channel
  // <= bytes, at least 1.
  const uint64_t c = bytes / std::max<uint64_t>(1, per_channel);
  return static_cast<int>(std::clamp<uint64_t>(c, 1, uint64_t(std::max(1, config_.max_channels))));
}

double Tuner::channel_rate(CollectiveProtocol p) const {
  // The GPU's rate for the protocol, shared equally by the channels.
  double gpu = 0;
  if (p == CollectiveProtocol::LL) gpu = fabric_.ll_max_bandwidth;
  // LL128: the measured rate, else its payload's share of the links.
  if (p == CollectiveProtocol::LL128)
    gpu = fabric_.ll128_max_bandwidth > 0 ? fabric_.ll128_max_bandwidth : fabric_.gpu_bandwidth * kLl128Payload;
  // A Simple channel that reads from its peer moves its share of the links, after each step's flag.
  if (p == CollectiveProtocol::Simple && fabric_.simple_reads_peer) gpu = fabric_.gpu_bandwidth;
  return gpu / std::max(1, config_.max_channels);
}

P2pPlan Tuner::p2p_exchange(uint64_t bytes, const CommunicatorShape& s, int& busy) const {
  const int n = std::max(1, s.ranks);
  const bool across = members_per_node(s) <= 1 && s.network_nodes > 1 && s.nodes > 1;
  const P2pPlan plan = p2p_plan(ceil_div(bytes, uint64_t(n)), n, across);
  busy = std::max(1, std::min(std::max(1, config_.p2p_channels), (n - 1) * plan.channels));
  return plan;
}

bool Tuner::runs_p2p(CollectiveOp op) const {
  return (op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV) && fabric_.p2p_channel_rate > 0;
}

P2pPlan Tuner::p2p_plan(uint64_t bytes, int ranks, bool across) const {
  P2pPlan plan;
  const int total = std::max(1, config_.p2p_channels);
  int per_peer = across ? config_.p2p_network_channels_per_peer : config_.p2p_channels_per_peer;
  if (across)  // (init.cc: fewer channels per network peer on large communicators)
    while (per_peer * ranks > total * 4 && per_peer > 1) per_peer /= 2;
  per_peer = std::clamp(per_peer, 1, total);
  int start = per_peer;
  while (start * ranks > total && start > 1) start /= 2;
  plan.chunk = across ? config_.p2p_network_chunk_bytes : config_.p2p_chunk_bytes;
  const uint64_t min_part = std::max<uint64_t>(1, across ? plan.chunk / 2 : plan.chunk / 8);
  const uint64_t max_part = across ? plan.chunk : plan.chunk * 32;
  const uint64_t b = std::max<uint64_t>(bytes, 1);
  int n = static_cast<int>(std::min<uint64_t>(uint64_t(start), ceil_div(b, min_part)));
  uint64_t part = std::max(min_part, ceil_div(b, uint64_t(n)));
  while (part > max_part && n <= per_peer / 2) {
    n *= 2;
    part = ceil_div(b, uint64_t(n));
  }
  plan.channels = n;
  plan.slice = std::max<uint64_t>(1, std::min<uint64_t>(plan.chunk, ceil_div(b, uint64_t(n))));
  const double channel = fabric_.p2p_channel_rate;
  if (across || channel <= 0) return plan;
  plan.rate = channel * n;
  plan.drain_s = double(plan.slice) / channel;
  return plan;
}

uint64_t Tuner::ring_chunk(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s, int channels) const {
  const uint64_t members = ring_family(op) ? uint64_t(std::max(1, s.ranks)) : 1;
  const uint64_t share = (bytes + members * uint64_t(std::max(1, channels)) - 1) / (members * uint64_t(std::max(1, channels)));
  return std::min<uint64_t>(config_.simple_chunk_bytes, share);
}

double Tuner::ring_fill(CollectiveOp op, CollectiveAlgorithm a, CollectiveProtocol p, uint64_t bytes,
                        const CommunicatorShape& s) const {
  if (a != CollectiveAlgorithm::Ring || p != CollectiveProtocol::Simple || s.ranks <= 1) return 0;
  if (fabric_.ring_fill_chunks <= 0 || fabric_.gpu_bandwidth <= 0) return 0;
  const int C = channels(a, p, bytes, s.ranks);
  const double passes = reduces(op) ? 2 : 1;
  return passes * fabric_.ring_fill_chunks * double(ring_chunk(op, bytes, s, C)) / (fabric_.gpu_bandwidth / C);
}

double Tuner::predict(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s,
                      CollectiveAlgorithm a, CollectiveProtocol p) const {
  return estimate(op, bytes, s, a, p, true);
}

double Tuner::estimate(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s, CollectiveAlgorithm a,
                       CollectiveProtocol p, bool as_run) const {
  const double factor = wire_factor(a, p, bytes, s.ranks) * (as_run ? handshake_factor(op, a, p, bytes, s) : 1.0);
  const ProtocolCost c = cost(a, p);
  const int network = s.network_nodes > 1 || a == CollectiveAlgorithm::CollNet ? network_steps(op, a, s) : 0;
  double latency = c.launch_us + (steps(op, a, s) - network) * c.step_us + network * c.network_step_us +
                   (as_run ? ring_fill(op, a, p, bytes, s) * 1e6 : 0.0);
  if (network > 0 && fabric_.gpu_network_bandwidth > 0) {
    // A network step waits for its first chunk to cross every hop (store and forward).
    const uint64_t transfer = static_cast<uint64_t>(network_transfer(op, a, bytes, s));
    const double chunk = double(chunk_size(transfer, config_.chunk_bytes, channels(a, p, bytes, s.ranks)));
    latency += network * fabric_.network_hops * chunk * factor / fabric_.gpu_network_bandwidth * 1e6;
  }
  // The phases pipeline: the busiest of NVLink, a GPU's way into the network and the node's
  // NICs sets the pace.
  // NVLS pipelines the switch's reduction and its multicast one loop (all channels, a chunk
  // of every member's shard) apart: the first loop is reduced before any is multicast.
  uint64_t loaded = bytes;
  if (a == CollectiveAlgorithm::Nvls)
    loaded += std::min<uint64_t>(bytes, uint64_t(channels(a, p, bytes, s.ranks)) * s.ranks * nvls_chunk(bytes, s.ranks));
  const CollectiveLoad l = load(op, a, loaded, s);
  double wire = l.nvlink / (fabric_.gpu_bandwidth > 0 ? fabric_.gpu_bandwidth : 1e12);
  if (fabric_.gpu_network_bandwidth > 0) wire = std::max(wire, l.gpu_network / fabric_.gpu_network_bandwidth);
  if (fabric_.node_network_bandwidth > 0) wire = std::max(wire, l.node_network / fabric_.node_network_bandwidth);
  wire *= factor;
  // The channels' own rate: each moves its share of the busiest GPU's payload. NCCL's model
  // knows LL's rate (llMaxBw) but not the one measured for LL128, and counts the channels of its
  // graph whatever the size (it drops channels for small calls once the algorithm is chosen).
  // Grouped sends and receives run on the channels their rounds keep busy, each at the
  // point-to-point rate, and end when the receivers have copied their last chunk out.
  const bool p2p = as_run && runs_p2p(op);
  int busy = 0;
  const P2pPlan exchange = p2p ? p2p_exchange(bytes, s, busy) : P2pPlan{};
  latency += exchange.drain_s * 1e6;
  const double rate = p2p ? fabric_.p2p_channel_rate : as_run || p == CollectiveProtocol::LL ? channel_rate(p) : 0.0;
  if (rate > 0) {
    const int C = p2p ? busy : as_run ? channels(a, p, bytes, s.ranks) : std::max(1, config_.max_channels);
    wire = std::max(wire, std::max(l.nvlink, l.gpu_network) / (C * rate));
  }
  if (!as_run && a == CollectiveAlgorithm::Tree) wire *= nccl_tree_penalty(p, s);
  return latency * 1e-6 + wire;
}

double Tuner::nccl_tree_penalty(CollectiveProtocol p, const CommunicatorShape& s) {
  // NCCL's bus bandwidth refinements (tuning.cc, ncclTopoTuneModel), ring's over tree's for the
  // same protocol: a tree runs at 0.92 of its graph's bandwidth, LL at a further 1/3.8 (the
  // ring's LL at 1/4 for an all-reduce), LL128 at a further 7/9 inside one node and 120/128
  // across nodes (the ring's LL128 at 0.92).
  switch (p) {
    case CollectiveProtocol::LL: return (1.0 / 4.0) / (0.92 / 3.8);
    case CollectiveProtocol::LL128: return 1.0 / (s.network_nodes > 1 ? kLl128Payload : 7.0 / 9.0);
    default: return 1.0 / 0.92;
  }
}

Choice Tuner::choose(CollectiveOp op, uint64_t bytes, const CommunicatorShape& s,
                     CollectiveAlgorithm algorithm, CollectiveProtocol protocol) const {
  Choice best;
  best.channels = channels(best.algorithm, best.protocol, bytes, s.ranks);
  if (s.ranks <= 1) return best;
  const bool a2a = op == CollectiveOp::AllToAll || op == CollectiveOp::AllToAllV;
  std::vector<CollectiveAlgorithm> algorithms;
  if (algorithm != CollectiveAlgorithm::Automatic) {
    if (!supports(op, algorithm, protocol, s)) throw std::invalid_argument(unsupported(op, algorithm, protocol, s));
    algorithms.push_back(algorithm);
  } else if (a2a) {
    algorithms = {CollectiveAlgorithm::Direct};
  } else {
    // NCCL's own choices: ring and tree everywhere, NVLS where the switches reduce (across
    // nodes its NVLS-tree: reduce in the node, a tree across nodes, multicast back), and CollNet
    // where the network switches reduce. Across nodes the hierarchical form where the
    // communicator names its dimensions; where the NVSwitches reduce, reduce-scatter and
    // all-gather keep it too (its rings in the node and across); elsewhere NCCL has no such
    // schedule and runs its rings or trees across the nodes.
    const bool hierarchical = s.dimensions_given || (fabric_.in_switch_reduction && !reduces(op));
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
                                  CollectiveAlgorithm::Nvls, CollectiveAlgorithm::Hierarchical,
                                  CollectiveAlgorithm::CollNet, CollectiveAlgorithm::NvlsTree}) {
      if ((a == CollectiveAlgorithm::Hierarchical || a == CollectiveAlgorithm::CollNet) && s.nodes <= 1) continue;
      if (a == CollectiveAlgorithm::Hierarchical && !hierarchical) continue;
      if (supports(op, a, protocol, s)) algorithms.push_back(a);
    }
  }
  double best_time = std::numeric_limits<double>::infinity();
  for (CollectiveAlgorithm a : algorithms)
    for (CollectiveProtocol p : kProtocols) {
      if (protocol != CollectiveProtocol::Automatic && p != protocol) continue;
      if ((a == CollectiveAlgorithm::Nvls || a == CollectiveAlgorithm::CollNet || a == CollectiveAlgorithm::NvlsTree) &&
          p != CollectiveProtocol::Simple)
        continue;
      // NCCL's tuner chooses by its own model: estimate(.., false).
      const double t = estimate(op, bytes, s, a, p, false);
      if (t < best_time) {
        best_time = t;
        best.algorithm = a;
        best.protocol = p;
      }
    }
  if (!std::isfinite(best_time))
    throw std::invalid_argument(std::string(op_name(op)) + " cannot run with protocol " +
                                protocol_name(protocol));
  best.predicted_s = predict(op, bytes, s, best.algorithm, best.protocol);
  // (An all-to-all of grouped sends and receives launches the point-to-point kernel on all of
  // its channels: each round of peers has its own.)
  best.channels = runs_p2p(op) ? std::max(1, config_.p2p_channels) : channels(best.algorithm, best.protocol, bytes, s.ranks);
  return best;
}

Choice choose_call(const Tuner& tuner, CollectiveOp op, uint64_t bytes, const CommunicatorShape& s,
                   CollectiveAlgorithm a, CollectiveProtocol p, CollectiveAlgorithm engine_algorithm,
                   CollectiveProtocol engine_protocol, int channels) {
  bytes = std::max<uint64_t>(bytes, op == CollectiveOp::Barrier ? uint64_t(s.ranks) : 1);
  if (a == CollectiveAlgorithm::Automatic &&
      tuner.supports(op, engine_algorithm, p == CollectiveProtocol::Automatic ? engine_protocol : p, s))
    a = engine_algorithm;
  if (p == CollectiveProtocol::Automatic && tuner.supports(op, a, engine_protocol, s))
    p = engine_protocol;
  Choice c = tuner.choose(op, bytes, s, a, p);
  if (channels > 0) c.channels = channels;
  return c;
}

}  // namespace tessera::models
