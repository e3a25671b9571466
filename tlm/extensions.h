// Payload extensions: what a TLM transaction carries in tessera.
//
// Three kinds of transaction exist: a compute event (a kernel sent from a GPU's command
// processor to its compute engine), a collective event (an NCCL-like call sent to the GPU's
// collective engine) and a fabric transfer (one chunk of bytes crossing links and switches).
// Payloads come from PayloadPool: each is a Payload, which holds one of each extension for its
// whole life, so nothing is allocated per transaction.
#pragma once

#include <cstdint>
#include <string>

#include <tlm>

namespace tessera::protocol {

struct ComputeEvent : tlm::tlm_extension<ComputeEvent> {
  const std::string* name = nullptr;  // op name (owned by the job)
  uint32_t rank = 0;
  uint32_t op = 0;                    // op index in the rank's program
  uint16_t stream = 0;
  uint8_t phase = 0;                  // workloads::ComputePhase, as a number
  uint8_t dtype = 0;                  // workloads::DType, as a number
  double flops = 0.0;
  double bytes = 0.0;                 // HBM traffic of the kernel
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;  // 0 when not a GEMM
  int64_t gemm_batch = 1;             // batched GEMMs (the attention core)
  uint8_t kind = 0;                   // workloads::KernelKind, as a number
  uint16_t kernels = 1;               // kernels the op launches
  int64_t elements = 0;               // memory-bound kernels: elements of the main input
  bool memory_copy = false;           // a copy-engine transfer rather than a kernel

  tlm::tlm_extension_base* clone() const override { return new ComputeEvent(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const ComputeEvent&>(other);
  }
};

enum class CollectiveOp : uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Broadcast,
  Reduce,
  Barrier,
  Send,
  Recv,
  AllToAllV  // all-to-all with uneven per-peer sizes (CollectiveEvent::splits)
};

// How a collective is executed (models/collectives/tuner.h documents each one).
enum class CollectiveAlgorithm : uint8_t {
  Automatic,        // the tuner chooses
  Ring,             // pipelined ring (chain for broadcast/reduce)
  Tree,             // double binary tree, pipelined
  Direct,           // one-shot exchange with every peer
  HalvingDoubling,  // recursive halving reduce-scatter + recursive doubling all-gather
  Hierarchical,     // per dimension: reduce-scatter inner, all-reduce outer, all-gather inner
  Nvls,             // in-switch reduction and multicast (NVLink SHARP)
  CollNet,          // reduce in the node, all-reduce in the network switches (InfiniBand
                    // SHARP), gather in the node
  NvlsTree          // reduce in the NVSwitches, double binary tree across nodes on each GPU's
                    // shard, multicast back (NCCL's NVLS_TREE)
};

// NCCL's wire protocols: per-step latency and the share of the wire that carries data.
enum class CollectiveProtocol : uint8_t { Automatic, Simple, LL, LL128 };

struct CollectiveEvent : tlm::tlm_extension<CollectiveEvent> {
  const std::string* name = nullptr;
  uint32_t rank = 0;
  uint32_t op = 0;
  CollectiveOp kind = CollectiveOp::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Automatic;
  CollectiveProtocol protocol = CollectiveProtocol::Automatic;
  const uint64_t* splits = nullptr;   // AllToAllV: n x n bytes, row = sender, column = receiver
  int32_t communicator = -1;          // Job communicator index (collectives)
  int32_t peer = -1;                  // peer rank (send/recv)
  uint32_t tag = 0;                   // send/recv matching tag
  uint64_t bytes = 0;                 // NCCL message size
  uint64_t flow = 0;                  // set by the collective engine: (communicator, call)
  sc_core::sc_time issued_at;         // when the command processor issued the op (its span)
  static constexpr uint32_t kUnnumbered = UINT32_MAX;
  uint32_t call = kUnnumbered;        // a collective's number among its rank's calls on the
                                      // communicator, in program order (kUnnumbered: the
                                      // collective engine numbers it in the order it starts)

  tlm::tlm_extension_base* clone() const override { return new CollectiveEvent(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const CollectiveEvent&>(other);
  }
};

// What a chunk on the fabric belongs to. SwitchReduce and SwitchMulticast chunks are for a
// switch with in-switch reduction: it adds up the contributions of every member and sends the
// sum to `destination` (reduce), or copies the chunk to every member (multicast).
// NetworkReduce chunks climb an in-network aggregation tree (`tree`, InfiniBand SHARP): each
// switch of the tree adds up what its children sent and passes one partial sum up; the root
// sends the sum down the tree as NetworkMulticast chunks, copied at every switch, and the
// switches deliver one copy to every member.
enum class TransferPurpose : uint8_t {
  Collective,
  PointToPoint,
  SwitchReduce,
  SwitchMulticast,
  NetworkReduce,
  NetworkMulticast
};

// A transfer into or out of an NVSwitch's reduction unit (NVLS), which the node's switch hash
// places (platforms::Routing::switch_hash), whichever GPU sends it.
inline bool in_switch(TransferPurpose p) {
  return p == TransferPurpose::SwitchReduce || p == TransferPurpose::SwitchMulticast;
}

struct AggregationTree;  // tlm/aggregation_tree.h

struct FabricTransfer : tlm::tlm_extension<FabricTransfer> {
  uint32_t source = 0;                // source GPU rank
  uint32_t destination = 0;           // destination GPU rank
  uint64_t bytes = 0;                 // payload bytes of this chunk
  uint64_t flow = 0;                  // collective instance or point-to-point message id
  uint32_t step = 0;                  // algorithm step the chunk belongs to
  uint32_t chunk = 0;                 // chunk index within the step
  uint32_t gateway = 0;               // the gateway (NIC) a transfer between nodes leaves and
                                      // arrives through: set by the source GPU's first hop
  uint64_t turn = 0;                  // routing's ECMP counter in the network: the chunk's place
                                      // among its transfer's chunks that reached this device
  uint16_t channel = 0;               // collective channel (picks the GPU's fabric port)
  uint16_t steps = 1;                 // algorithm steps in series the transfer stands for: 1,
                                      // but flow fidelity merges a ring's steps into one
                                      // transfer, which arrives no earlier than `steps` times
                                      // (path latency + step_latency + one chunk's wire time)
                                      // after it started
  uint64_t step_latency = 0;          // with steps > 1: the protocol's per-step latency
                                      // (sc_time value)
  uint64_t step_chunk_bytes = 0;      // with steps > 1: the chunk each step forwards before
                                      // the next step can go on (it pipelines in chunks)
  TransferPurpose purpose = TransferPurpose::Collective;
  bool stored_and_forwarded = false;  // flow fidelity: a chunk that arrives no earlier than
                                      // step_chunk_bytes stored and forwarded on every link (a
                                      // tree's tail: packet fidelity's chunk, level by level)
  float wire_factor = 1.0f;           // wire bytes per payload byte of the protocol (LL: 2)
  double rate_cap = 0;                // flow fidelity: the most payload bytes/s the sender's
                                      // channels move this transfer at (0: the links alone)
  const int* members = nullptr;       // SwitchReduce/SwitchMulticast: the member ranks (echo: the ring)
  uint32_t member_count = 0;
  const AggregationTree* tree = nullptr;  // NetworkReduce/NetworkMulticast: the tree it climbs
  // Flow fidelity, an echo node's ring (CollectiveEngine::echo): the transfer stands for every
  // member's to the member after it (`members`, in ring order, are the ring); the fabric hands
  // it back to its source on arrival and counts its images on their own links. An echo node's
  // in-switch reduction's chunks stand for every member's too, and arrive at their destination
  // (FlowFabric::echo_reduced, echo_multicast).
  bool echo = false;

  // The GPU the transfer arrives at: a ring's echo comes back to its source.
  uint32_t receiver() const {
    return echo && !in_switch(purpose) ? source : destination;
  }

  tlm::tlm_extension_base* clone() const override { return new FabricTransfer(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const FabricTransfer&>(other);
  }
};

// A payload of tessera's (PayloadPool makes them all): one of each extension held in place and
// attached for the payload's whole life, so TLM's get_extension finds them, and the accessors
// below reach them without the extension table's lookup (a call into the SystemC library and two
// loads from other cache lines, per access, on the hot path).
class Payload final : public tlm::tlm_generic_payload {
 public:
  explicit Payload(tlm::tlm_mm_interface* mm) : tlm::tlm_generic_payload(mm) {
    set_extension(&compute);
    set_extension(&collective);
    set_extension(&transfer);
  }
  ~Payload() override {  // the extensions are members, not the payload's to delete
    clear_extension(&compute);
    clear_extension(&collective);
    clear_extension(&transfer);
  }
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;

  ComputeEvent compute;
  CollectiveEvent collective;
  FabricTransfer transfer;
};

inline ComputeEvent& compute_event(tlm::tlm_generic_payload& gp) { return static_cast<Payload&>(gp).compute; }
inline CollectiveEvent& collective_event(tlm::tlm_generic_payload& gp) {
  return static_cast<Payload&>(gp).collective;
}
inline FabricTransfer& fabric_transfer(tlm::tlm_generic_payload& gp) { return static_cast<Payload&>(gp).transfer; }

}  // namespace tessera::protocol
