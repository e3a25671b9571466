// Algorithm and protocol selection for one collective call, in the manner of NCCL's tuner
// (src/graph/tuning.cc): every (algorithm, protocol) pair the call can use gets a predicted time
//
//     t = launch(a, p) + (steps - net) * step(a, p) + net * network_step(a, p)
//         + wire_factor(a, p) * max(nvlink / B, gpu_network / B_gpu_net, node_network / B_node_net)
//
// and the smallest wins. launch, step and network_step are NCCL's measured latencies (baseLat,
// and hwLat for NVLink and for the network); steps is the number of dependent steps of the
// schedule, net how many of them cross the network; nvlink the bytes the busiest GPU sends on
// its NVLink ports, gpu_network what the busiest GPU sends into the network (through its PCIe
// port and its nearest NICs) and node_network what the busiest node sends through all its NICs
// (the phases pipeline, so the busiest of the three sets the pace); wire_factor what the
// protocol adds to the wire (LL: 8-byte lines of 4 data and 4 flag bytes, 2x; LL128: 120 data
// bytes per 128-byte line, 128/120x; Simple 1x; NVLS: the switch's reduction runs at
// nvls_efficiency of the link). The network terms count only when the communicator spans
// several nodes of a platform with a network. docs/collectives.md gives each schedule and its
// cost.
//
// The same function is the engine's choice on every rank (it depends only on the call, the
// communicator shape and the platform), so all members run the same schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tlm/extensions.h"
#include "workloads/program.h"

namespace tessera::models {

using protocol::CollectiveAlgorithm;
using protocol::CollectiveOp;
using protocol::CollectiveProtocol;

const char* algorithm_name(CollectiveAlgorithm a);
const char* protocol_name(CollectiveProtocol p);
const char* op_name(CollectiveOp op);
// "ring", "tree", "direct", "halving-doubling", "hierarchical", "nvls", "collnet", "nvls_tree",
// "auto" (case-insensitive); false if unknown.
bool parse_algorithm(const std::string& name, CollectiveAlgorithm& out);
// "simple", "ll", "ll128", "auto" (case-insensitive); false if unknown.
bool parse_protocol(const std::string& name, CollectiveProtocol& out);
// A per-op choice "algorithm" or "algorithm/protocol" (e.g. "ring/ll128"); false if unknown.
bool parse_algorithm_choice(const std::string& text, CollectiveAlgorithm& algorithm,
                            CollectiveProtocol& protocol);
// A collective op's own choice (`op.algorithm`, a name in the job's table; automatic where 0);
// an unknown name is std::invalid_argument naming the op and the name.
void op_algorithm_choice(const workloads::Job& job, const workloads::Op& op, CollectiveAlgorithm& algorithm,
                         CollectiveProtocol& protocol);
// The engine's name of a workload collective.
CollectiveOp collective_op(workloads::CollectiveKind kind);

// Latency of one protocol on one algorithm family, microseconds.
struct ProtocolCost {
  double launch_us = 0;        // once per call (NCCL baseLat)
  double step_us = 0;          // per dependent step, end to end over NVLink (NCCL hwLat)
  double network_step_us = 0;  // per dependent step through the network (NCCL hwLat NET)
};

// NCCL's protocol costs (tuning.cc, NCCL 2.18-2.21, NVLink and NET rows), indexed
// [Simple, LL, LL128].
struct TunerConfig {
  ProtocolCost ring[3] = {{8.4, 3.4, 14.0}, {6.6, 0.6, 2.7}, {14.0, 1.9, 4.0}};
  ProtocolCost tree[3] = {{0.0, 28.0, 28.0}, {6.8, 0.6, 5.0}, {14.0, 1.25, 8.5}};
  // NCCL models NVLS as one 23 us latency; our schedule has two dependent steps (reduce in the
  // switch, multicast back), so half of it each. Across nodes NVLS runs with SHARP (18 us NET).
  ProtocolCost nvls = {0.0, 11.5, 18.0};
  // CollNet Direct (simple only): 3.7 us per step in the node, 31 us for the round trip through
  // the SHARP tree.
  ProtocolCost collnet = {0.0, 3.7, 31.0};
  // NVLS-tree (simple only): NCCL's 23 us NVLink latency, halved over our two in-switch steps as
  // for NVLS, and 14 us per level of the tree across nodes (hwLat NET NVLSTree; tuning.cc
  // charges intraLat + 2 log2(nodes) interLat).
  ProtocolCost nvls_tree = {0.0, 11.5, 14.0};
  // NVLS as NCCL runs it (enqueue.cc, tuning.cc): nvls_channels channels whatever the size, each
  // moving the buffer in chunks of nvls_chunk(bytes) (NCCL's 128 KiB, cut to 64/32/16 KiB for
  // smaller calls). nvls_efficiency is NCCL's measured efficiency for Hopper at the full chunk;
  // each chunk costs its channel one NVLink flag handshake (nvls_handshake_us, NCCL's NVLink
  // step latency for flags, hwLat LL) that does not overlap its data, so smaller chunks run
  // at a smaller share of the link (wire_factor). 0 disables the handshake.
  // NCCL's latencies hold for GPUs at this SM clock: Hopper's 1,980 MHz boost (the DGX H100
  // curve's 13-16 us small-size floor against the model's 15). The GPU side of a protocol's
  // launch and step latencies (flag polling and the kernel's own work) runs on the SMs, so on
  // a GPU of another clock it scales by reference / clock (A100, 1,410 MHz: x1.40, 21 us,
  // between the 17 and 24 us floors measured on A100 nodes); network steps do not scale.
  double reference_clock_mhz = 1980;
  double nvls_efficiency = 0.85;
  int nvls_channels = 16;
  uint64_t nvls_chunk_bytes = 128 * 1024;
  uint64_t nvls_tree_max_chunk_bytes = 64 * 1024;
  double nvls_handshake_us = 0.6;
  uint64_t chunk_bytes = 128 * 1024;  // the engine's largest chunk (CollectiveEngineConfig)
  // NCCL's ring chunk with the Simple protocol: a step (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8)
  // times ALLREDUCE_CHUNKSTEPS (NCCL_STEPS / 2) = 2 MiB; smaller calls cut it to their share
  // of a channel (device/all_reduce.h: min(chunkSize, size / (nChannels x nRanks))).
  uint64_t simple_chunk_bytes = 2 * 1024 * 1024;
  // NCCL's point-to-point chunk over NVLink (NCCL_P2P_NVL_CHUNKSIZE, 512 KiB): all-to-all's
  // sends and receives move in chunks of it, one handshake each.
  uint64_t p2p_chunk_bytes = 512 * 1024;
  // NCCL's point-to-point plan (sends, receives; enqueue.cc addP2pToPlan): the p2p kernel has
  // p2p_channels channels (init.cc ncclTopoComputeP2pChannels: the collective channels rounded
  // up to a power of two; "32 p2p channels, 32 p2p channels per peer" in NCCL's log on DGX H100
  // nodes), and one peer's message is striped over at most p2p_channels_per_peer of them:
  // 2 x NVLinks between the GPUs rounded up to a power of two within a node (32), 2 for a peer
  // across the network (NCCL_NCHANNELS_PER_NET_PEER's default, 1 past 4 x p2p_channels / 2
  // ranks). Its chunk is NCCL_P2P_NVL_CHUNKSIZE (p2p_chunk_bytes) within an NVLink node,
  // NCCL_P2P_NET_CHUNKSIZE (128 KiB) across nodes.
  int p2p_channels = 32;
  int p2p_channels_per_peer = 32;
  int p2p_network_channels_per_peer = 2;
  uint64_t p2p_network_chunk_bytes = 128 * 1024;
  int max_channels = 16;          // parallel rings/trees, one SM each
  // NCCL's channel count (enqueue.cc): a channel is dropped while the call has fewer than
  // threads x threshold bytes per channel: Simple 512 threads x 64 B, LL 512 x 8 B per rank
  // (ring) or 8 B (tree), LL128 640 x 8 B.
  uint64_t simple_bytes_per_channel = 512 * 64;
  uint64_t ll_bytes_per_thread = 8;
  uint64_t ll128_bytes_per_channel = 640 * 8;
};

// What the tuner knows of the platform; the platform builder fills it in.
struct FabricFacts {
  double gpu_bandwidth = 0;     // effective payload bytes/s a GPU sends (and receives) on its ports
  double hop_latency_s = 0;     // GPU -> switch -> GPU, beyond serialization
  bool in_switch_reduction = false;
  int sm_count = 132;
  double sm_clock_mhz = 0;  // the GPU's boost clock (0: unknown, latencies as NCCL's)
  // The most payload bytes/s one GPU moves with the LL protocol (NCCL's llMaxBw: LL's 8-byte
  // stores with flags are issued by the SMs' threads, not limited by the links); 0: no limit.
  double ll_max_bandwidth = 0;
  // The same for LL128 (GpuSpec::ll128_max_bandwidth_gbps); 0: no limit.
  double ll128_max_bandwidth = 0;
  // Chunk times a Simple ring pass takes beyond a lossless pipeline (GpuSpec::ring_fill_chunks).
  double ring_fill_chunks = 0;
  // Simple channels read their step's data from the peer after its flag (GpuSpec::simple_reads_peer).
  bool simple_reads_peer = false;
  // Payload bytes/s one point-to-point channel moves to a peer in the node (GpuSpec::
  // p2p_channel_gbps); 0: the links alone limit it.
  double p2p_channel_rate = 0;
  // Seconds a channel spends per Simple slice without moving data (GpuSpec::simple_handshake_us).
  double simple_handshake_s = 0;
  // Across nodes (0: no network).
  int gpus_per_node = 0;                // the platform's node (0: every GPU in one node)
  double gpu_network_bandwidth = 0;     // payload bytes/s one GPU sends into the network
  double node_network_bandwidth = 0;    // payload bytes/s one node sends (all its NICs)
  double network_latency_s = 0;         // GPU -> NIC -> network switch -> NIC -> GPU, beyond serialization
  int network_hops = 0;                 // links a chunk crosses from a GPU to one in another node,
                                        // stored and forwarded at each
  bool in_network_reduction = false;    // InfiniBand SHARP in the network switches
};

struct CommunicatorShape {
  int ranks = 1;
  int nodes = 1;                // as the algorithms group the members (rank / gpus_per_node)
  int gpus_per_node = 0;        // members per node when every node has as many, else 0
  std::vector<int> dimensions;  // hierarchical dimensions, innermost first (product = ranks)
  bool dimensions_given = false;  // named by the communicator (else {members per node, nodes})
  int network_nodes = 1;        // the platform's nodes the members are on: > 1, traffic between
                                // nodes crosses the network
  bool node_blocks = false;     // every node's members are consecutive in communicator order
                                // (gpus_per_node > 0): position p is member p % g of node p / g
};

// One of a rank's rings: NCCL gives each channel its own ring. Across the platform's nodes a
// ring visits every member of a node before it moves on, and channel c enters each node at
// member c mod g (its NIC), so the node crossings (and NICs) spread over the node's GPUs;
// rings that enter at an even member run through the node backwards and leave at the member
// after it, those that enter at an odd member forwards and leave at the one before: entry and
// exit are neighbours (the GPUs that share a PCIe switch and its NICs on DGX nodes). The
// channels of a ring are first_channel, first_channel + stride, ...; `channels` of them.
struct RingChannels {
  int next = -1, previous = -1;  // communicator positions
  int first_channel = 0, stride = 1, channels = 1;
};
// The rings of position p in a communicator of `shape` run on `channels` channels: one ring
// (positions p+1 and p-1 on every channel) unless the communicator spans several of the
// platform's nodes with the same members in each (node_blocks), then min(channels, g) rings.
// At most max_rings rings.
std::vector<RingChannels> ring_channels(const CommunicatorShape& shape, int p, int channels,
                                        int max_rings = 1 << 30);

// What the busiest GPU port, GPU and node carry for one call, payload bytes.
struct CollectiveLoad {
  double nvlink = 0;        // on one GPU's NVLink (or intra-node) ports
  double gpu_network = 0;   // from one GPU into the network
  double node_network = 0;  // from one node into the network
};

// The shape of a communicator over global `ranks`, the node of a rank being
// rank / gpus_per_node (0: one node); hierarchical `dimensions` as given, else {members per
// node, nodes} when every node has as many members; network nodes by the platform's node size
// (0: the same as gpus_per_node).
CommunicatorShape communicator_shape(const std::vector<int>& ranks, int gpus_per_node,
                                     const std::vector<int>& dimensions = {},
                                     int platform_gpus_per_node = 0);

// The chunk a transfer of `bytes` is cut into: at most `chunk_bytes`, spread over `channels`,
// and at most kMaxChunksPerTransfer chunks (larger calls get larger chunks, so a call costs a
// bounded number of events; the pipeline's fill and drain stay below 1/256 of a step).
constexpr uint64_t kMaxChunksPerTransfer = 256;
uint64_t chunk_size(uint64_t bytes, uint64_t chunk_bytes, int channels);

// How NCCL moves one point-to-point message (a send and its receive): over `channels`
// channels in chunks of `chunk` bytes; where the peer is in the node and the GPU's channel rate
// is known, at most `rate` payload bytes/s (channels x the channel's rate), and the receiver
// copies the last chunk out of its buffer `drain_s` after it arrived (a chunk at a channel's
// rate). rate 0: the links alone limit it.
struct P2pPlan {
  int channels = 1;
  uint64_t chunk = 0;
  uint64_t slice = 1;  // what a channel moves between handshakes: its part, at most a chunk
  double rate = 0;
  double drain_s = 0;
};

struct Choice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
  int channels = 1;
  double predicted_s = 0;
};

class Tuner {
 public:
  Tuner(const TunerConfig& config, const FabricFacts& fabric) : config_(config), fabric_(fabric) {}

  // The pair to run: the forced ones where given (throws std::invalid_argument naming why if
  // the call cannot run that way), else the fastest predicted.
  Choice choose(CollectiveOp op, uint64_t bytes, const CommunicatorShape& shape,
                CollectiveAlgorithm algorithm = CollectiveAlgorithm::Automatic,
                CollectiveProtocol protocol = CollectiveProtocol::Automatic) const;

  // Empty when `algorithm` with `protocol` can run `op` on `shape`, else the reason.
  std::string unsupported(CollectiveOp op, CollectiveAlgorithm algorithm,
                          CollectiveProtocol protocol, const CommunicatorShape& shape) const;
  bool supports(CollectiveOp op, CollectiveAlgorithm algorithm, CollectiveProtocol protocol,
                const CommunicatorShape& shape) const {
    return limit(op, algorithm, protocol, shape) == Limit::None;
  }
  // Predicted time in seconds (the cost model above).
  double predict(CollectiveOp op, uint64_t bytes, const CommunicatorShape& shape,
                 CollectiveAlgorithm algorithm, CollectiveProtocol protocol) const;
  // The cost model as the engine runs the call (as_run; predict), or as NCCL's own tuner sees
  // it (choose() compares these): without what was measured beyond NCCL's model (the Simple
  // protocol's handshakes per slice, the ring's fill, LL128's rate), with all channels whatever
  // the size, and with NCCL's own penalty for trees (nccl_tree_penalty).
  double estimate(CollectiveOp op, uint64_t bytes, const CommunicatorShape& shape,
                  CollectiveAlgorithm algorithm, CollectiveProtocol protocol, bool as_run) const;
  // How much longer NCCL's model takes a tree's bytes than a ring's, for protocol `p`.
  static double nccl_tree_penalty(CollectiveProtocol p, const CommunicatorShape& shape);

  // The protocol's latencies on this platform's GPUs: NCCL's (nccl_cost), their GPU side scaled
  // to the SM clock (TunerConfig::reference_clock_mhz).
  ProtocolCost cost(CollectiveAlgorithm algorithm, CollectiveProtocol protocol) const;
  // NCCL's latencies as tuning.cc has them.
  ProtocolCost nccl_cost(CollectiveAlgorithm algorithm, CollectiveProtocol protocol) const;
  // Dependent steps of the schedule (each pays step_us once on the critical path), and how
  // many of them cross between the communicator's nodes (through the network, they pay
  // network_step_us instead).
  static int steps(CollectiveOp op, CollectiveAlgorithm algorithm, const CommunicatorShape& shape);
  static int network_steps(CollectiveOp op, CollectiveAlgorithm algorithm, const CommunicatorShape& shape);
  // Whether the hierarchical schedule runs NCCL's NVLS-tree across nodes: an all-reduce whose
  // outermost dimension (of two or more) crosses the platform's nodes runs a double binary tree
  // there, not a ring.
  static bool tree_across_nodes(CollectiveOp op, const CommunicatorShape& shape);
  // Payload bytes the busiest GPU port, GPU and node send for a call of `bytes`.
  CollectiveLoad load(CollectiveOp op, CollectiveAlgorithm algorithm, uint64_t bytes,
                      const CommunicatorShape& shape) const;
  // Bytes of one transfer of a step that crosses the network (each dependent such step waits
  // for its first chunk to be stored and forwarded over every hop).
  static double network_transfer(CollectiveOp op, CollectiveAlgorithm algorithm, uint64_t bytes,
                                 const CommunicatorShape& shape);
  // Wire bytes per payload byte of a protocol (and of NVLS transfers) for a call of `bytes`
  // over `ranks` members: LL twice the payload (4 flag bytes per 8); LL128 128/120; NVLS the
  // switch's efficiency at the call's chunk size.
  double wire_factor(CollectiveAlgorithm algorithm, CollectiveProtocol protocol, uint64_t bytes,
                     int ranks) const;
  // What the Simple protocol's handshakes per slice (FabricFacts::simple_handshake_s) add to
  // the wire of a ring or direct exchange on `shape`: 1 + the bytes the channel's share of its
  // GPU's slowest way out (NVLink, or its network port where the call crosses nodes) could
  // have moved during one, per slice; 1 for other algorithms and protocols.
  double handshake_factor(CollectiveOp op, CollectiveAlgorithm algorithm, CollectiveProtocol protocol,
                          uint64_t bytes, const CommunicatorShape& shape) const;
  // NCCL's NVLS chunk for a call of `bytes` over `ranks` members: nvls_chunk_bytes, then 64 KiB
  // below 64 loops of all channels and members, 32 KiB below 8, 16 KiB below 2.
  uint64_t nvls_chunk(uint64_t bytes, int ranks) const;
  // NCCL's NVLS-tree chunk (enqueue.cc) for an all-reduce of `bytes` with `heads` members per
  // node on `nodes` nodes: nvls_chunk_bytes, at most nvls_tree_max_chunk_bytes from 4 nodes on
  // (NCCL_NVLSTREE_MAX_CHUNKSIZE's default), then 64 KiB below 4 loops of all channels and
  // heads, 32 KiB below 1.
  uint64_t nvls_tree_chunk(uint64_t bytes, int heads, int nodes) const;
  // The switch's wire bytes per payload byte where NVLS moves chunks of `chunk` bytes: NCCL's
  // efficiency at the full chunk, and one handshake per chunk.
  double nvls_wire_factor(uint64_t chunk) const;
  // The bytes one channel moves between two handshakes with the Simple protocol for a call
  // `op` of `bytes` over `shape`: a ring's slice (half its chunk, ring_chunk: a chain's
  // broadcast or reduce is not cut by members), a direct exchange's point-to-point chunk (at
  // most p2p_chunk_bytes); 0 for other algorithms, whose steps the model charges otherwise.
  uint64_t simple_slice(CollectiveOp op, CollectiveAlgorithm algorithm, uint64_t bytes,
                        const CommunicatorShape& shape) const;
  // Channels a call of `bytes` over `ranks` members runs on: NVLS its fixed count, else NCCL's
  // rule for the protocol (TunerConfig), at most max_channels.
  int channels(CollectiveAlgorithm algorithm, CollectiveProtocol protocol, uint64_t bytes, int ranks) const;
  // Payload bytes/s one channel (one SM) moves with `protocol`; 0: the links alone limit it.
  // LL (LL128): the GPU's LL (LL128) rate (FabricFacts::ll_max_bandwidth,
  // ll128_max_bandwidth) over max_channels, so a call on fewer channels runs slower, and a
  // channel waiting for its step's data cannot be made up by another.
  double channel_rate(CollectiveProtocol protocol) const;
  // NCCL's plan for a message of `bytes` to one peer on a communicator of `ranks` members
  // (enqueue.cc addP2pToPlan): it starts on the most channels that keep every peer of the
  // communicator on its own (p2p_channels_per_peer halved while channels x ranks >
  // p2p_channels), at most one per chunk / 8 bytes (chunk / 2 across nodes), and doubles them
  // while a channel would carry more than 32 chunks (one across nodes), up to
  // p2p_channels_per_peer. `across`: the peer is on another of the platform's nodes.
  P2pPlan p2p_plan(uint64_t bytes, int ranks, bool across) const;
  // Whether `op` runs as NCCL's grouped sends and receives on p2p_plan's channels: all-to-all
  // where the GPU's point-to-point channel rate is known.
  bool runs_p2p(CollectiveOp op) const;
  // The plan of one member's share of an all-to-all of `bytes` on `shape` to a peer in its node
  // (across nodes where each node has one member), and in `busy` the kernel channels its
  // rounds keep busy (rounds x the plan's channels, at most p2p_channels).
  P2pPlan p2p_exchange(uint64_t bytes, const CommunicatorShape& shape, int& busy) const;
  // NCCL's Simple ring chunk for a call of `bytes` over `shape` on `channels`: at most
  // simple_chunk_bytes, else the share of one channel of one member's segment.
  uint64_t ring_chunk(CollectiveOp op, uint64_t bytes, const CommunicatorShape& shape, int channels) const;
  // Seconds a Simple ring takes beyond its lossless pipeline: ring_fill_chunks chunk times per
  // pass on one channel's share of the GPU's NVLink bandwidth; 0 for other algorithms and
  // protocols or where the platform has no such term.
  double ring_fill(CollectiveOp op, CollectiveAlgorithm algorithm, CollectiveProtocol protocol,
                   uint64_t bytes, const CommunicatorShape& shape) const;

  const TunerConfig& config() const { return config_; }
  const FabricFacts& fabric() const { return fabric_; }

 private:
  // What keeps an algorithm and protocol from a call (unsupported() words it): none, a send or
  // receive, an all-to-all off `direct`, the op, the rank count or nodes, the switches, or the
  // protocol.
  enum class Limit { None, SendRecv, DirectOnly, Op, Ranks, Switches, Protocol };
  Limit limit(CollectiveOp op, CollectiveAlgorithm algorithm, CollectiveProtocol protocol,
              const CommunicatorShape& shape) const;
  TunerConfig config_;
  FabricFacts fabric_;
};

// What a collective call runs, as every member's engine decides it: the call's own algorithm
// and protocol must run (call_*; Automatic: none named), the engine-wide ones (engine_*) apply
// where they can, else the tuner's fastest; `channels` > 0 forces the channel count. A barrier
// moves one byte per member.
Choice choose_call(const Tuner& tuner, CollectiveOp op, uint64_t bytes, const CommunicatorShape& shape,
                   CollectiveAlgorithm call_algorithm, CollectiveProtocol call_protocol,
                   CollectiveAlgorithm engine_algorithm, CollectiveProtocol engine_protocol,
                   int channels = 0);

// Depth of the in-order binary tree NCCL builds over n ranks (hops from root to deepest leaf).
int binary_tree_depth(int n);
// The in-order binary tree over positions 0..n-1 (NCCL's btree shape): parent (-1 at the root)
// and up to two children (-1 where absent).
void binary_tree(int n, int position, int& parent, int& child0, int& child1);

}  // namespace tessera::models
