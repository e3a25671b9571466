// The collective engine a GPU runs: an NCCL-like library that turns a collective call into
// chunked fabric transfers.
//
// Algorithms (one channel):
//  - ring all-reduce: 2(n-1) steps; in step s rank p sends segment (p - s) mod n to its ring
//    successor; a chunk of step s+1 leaves as soon as the same chunk of step s has arrived, so
//    steps pipeline chunk by chunk. Reduce-scatter and all-gather are n-1 steps of the same ring.
//  - chain broadcast / reduce: the n-1 hops of the ring from (or towards) the root, pipelined.
//  - direct all-to-all: every rank sends its n-1 segments straight to their owners.
// Members are matched by communicator and call sequence number: the k-th collective a rank
// issues on a communicator is the k-th of every other member. Chunks that arrive before a rank
// has joined are kept (as counts) and processed when it joins.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/link/fabric_port.h"
#include "tlm/extensions.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"
#include "workloads/program.h"

namespace tessera::models {

// Puts a chunk on the GPU's fabric ports.
class FabricInjector {
 public:
  virtual ~FabricInjector() = default;
  virtual void inject(tlm::tlm_generic_payload& gp, PacketSource& source) = 0;
};

struct CollectiveEngineConfig {
  uint64_t chunk_bytes = 128 * 1024;  // bytes per fabric chunk
};

class CollectiveEngine : public sc_core::sc_module, public PacketSource {
 public:
  protocol::TargetSocket<CollectiveEngine> socket;

  CollectiveEngine(sc_core::sc_module_name name, int rank, const workloads::Job& job,
                   protocol::PayloadPool& pool, FabricInjector& fabric,
                   const CollectiveEngineConfig& config);

  // A chunk for this GPU arrived from the fabric; the engine consumes (releases) it.
  void chunk_arrived(tlm::tlm_generic_payload& gp);
  // A chunk this engine injected has left the GPU.
  void packet_left(tlm::tlm_generic_payload& gp) override;

  // How many collectives this rank has started on a communicator.
  uint32_t joined(int communicator) const { return joined_[communicator]; }

  struct Waiting {
    uint32_t op = 0;
    std::string what;           // e.g. "allreduce on dp (call 3), 12 of 14 chunks missing"
    int communicator = -1;      // -1 for send/receive
    uint32_t sequence = 0;
    int peer = -1;              // send/receive peer
  };
  std::vector<Waiting> waiting() const;

  uint64_t bytes_injected() const { return bytes_injected_; }
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  struct Instance {
    tlm::tlm_generic_payload* call = nullptr;  // the command processor's transaction
    protocol::CollectiveOp kind = protocol::CollectiveOp::AllReduce;
    int communicator = -1;
    uint32_t sequence = 0;
    uint32_t steps = 0;          // steps of the plan; a chunk of step s is forwarded as s+1
    uint64_t segment = 0;        // bytes per step (per peer for all-to-all)
    uint32_t chunks = 0;         // chunks per step
    int next = -1;               // ring/chain successor rank
    uint64_t sends_expected = 0, sends_done = 0;
    uint64_t recvs_expected = 0, recvs_done = 0;
    bool finishing = false;
    std::vector<uint64_t> early;  // (step << 32 | chunk) that arrived before this rank joined
  };
  struct PointToPoint {
    uint64_t available = 0;       // bytes arrived and not yet claimed by a receive
    std::vector<tlm::tlm_generic_payload*> receives;  // waiting receives, in issue order
  };

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void start_collective(tlm::tlm_generic_payload& call);
  void start_send(tlm::tlm_generic_payload& call);
  void start_receive(tlm::tlm_generic_payload& call);
  void plan(Instance& inst, const protocol::CollectiveEvent& e);
  void send_chunk(uint64_t flow, const Instance& inst, int destination, uint32_t step,
                  uint32_t chunk);
  void received(uint64_t flow, Instance& inst, uint32_t step, uint32_t chunk);
  void check_done(uint64_t flow, Instance& inst);
  void match_receives(PointToPoint& p2p);
  void finish(tlm::tlm_generic_payload* call);
  void deliver_finished();
  uint64_t chunk_size(uint64_t segment, uint32_t chunk) const;

  int rank_;
  const workloads::Job& job_;
  protocol::PayloadPool& pool_;
  FabricInjector& fabric_;
  CollectiveEngineConfig config_;
  std::vector<uint32_t> joined_;
  std::vector<int> position_;  // this rank's position in each communicator, -1 if absent
  std::unordered_map<uint64_t, Instance> instances_;        // by flow (communicator, call)
  std::unordered_map<uint64_t, Instance> sends_;            // by (peer, tag)
  std::unordered_map<uint64_t, PointToPoint> receives_;     // by (source, tag)
  std::vector<tlm::tlm_generic_payload*> finished_;
  std::vector<uint64_t> finished_flows_;
  sc_core::sc_event finished_event_;
  uint64_t bytes_injected_ = 0;
  uint64_t bytes_received_ = 0;
};

}  // namespace tessera::models
