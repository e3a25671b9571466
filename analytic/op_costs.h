// What each op of a program costs in the analytic model, from the same models the simulation
// uses: compute and copy ops from the compute model (the KernelTimer the GPUs get; the roofline
// without one), collectives from the collective tuner's prediction for the algorithm, protocol
// and channels the engines would choose, point-to-point transfers from the platform's routes
// (the bottleneck link's payload rate and the path's latency, as one uncontended flow).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/collectives/collective_engine.h"
#include "models/gpu/kernel_timer.h"
#include "platforms/flow_paths.h"
#include "platforms/platform_config.h"
#include "platforms/routing.h"
#include "workloads/program.h"

namespace tessera::analytic {

struct CostOptions {
  // The compute model (null: the GPU's roofline).
  std::shared_ptr<const models::KernelTimer> kernel_timer;
  // Chunk size, node size for hierarchical and tree collectives, forced algorithm/protocol.
  models::CollectiveEngineConfig collectives;
};

struct CollectiveCost {
  double seconds = 0;   // once every member has joined: the tuner's prediction
  double launch_s = 0;  // from a member's issue until its kernels hold SMs
  int channels = 0;     // SMs the call holds on each member
  double member_bytes = 0;  // payload bytes a member sends (and receives)
};

struct TransferCost {
  double serialization_s = 0;  // last byte sent (a Send completes)
  double latency_s = 0;        // then the path's latency (a Recv completes)
};

class OpCosts {
 public:
  OpCosts(const platforms::PlatformConfig& platform, const platforms::RoutedTopology& topology,
          const workloads::Job& job, const CostOptions& options);

  const std::vector<models::CommunicatorShape>& shapes() const { return shapes_; }
  const models::Tuner& tuner() const { return tuner_; }
  // Compute op `index` of the rank's program on an idle GPU: the id of its work (ops of the
  // same work share it), whose time kernel_time() gives.
  uint32_t compute(const workloads::Rank& rank, uint32_t index);
  const models::KernelTime& kernel_time(uint32_t id) const { return kernel_times_[id]; }
  // A copy-engine op.
  double copy(const workloads::Rank& rank, uint32_t index) const;
  CollectiveCost collective(const workloads::Rank& rank, const workloads::Op& op);
  TransferCost transfer(int source, int destination, uint64_t bytes, uint32_t tag);

 private:
  const platforms::PlatformConfig& platform_;
  const workloads::Job& job_;
  CostOptions options_;
  models::Tuner tuner_;
  std::vector<models::CommunicatorShape> shapes_;
  platforms::RoutedPaths paths_;
  std::vector<uint32_t> path_;
  std::vector<double> shares_;  // of path_ (empty: every link carries all of it)
  // Each link as transfers read it, by id, read from the routes once.
  struct LinkCost {
    protocol::LinkTiming timing;
    double latency_s = -1;  // the link's and the hop's it leaves (< 0: not read yet)
  };
  const LinkCost& link(uint32_t id);
  std::vector<LinkCost> links_;  // by link id (declared after paths_, which sizes it)
  // A kernel's time depends only on its work, which repeats from layer to layer and
  // micro-batch to micro-batch: each distinct work is timed once. Likewise a collective by
  // (communicator, kind, bytes, algorithm).
  struct KernelWork {
    double flops = 0, bytes = 0;
    int64_t m = 0, n = 0, k = 0, batch = 0, elements = 0;
    int32_t kernels = 0;
    uint8_t kernel = 0, dtype = 0;
    bool operator==(const KernelWork& o) const {
      return flops == o.flops && bytes == o.bytes && m == o.m && n == o.n && k == o.k && batch == o.batch &&
             elements == o.elements && kernels == o.kernels && kernel == o.kernel && dtype == o.dtype;
    }
  };
  struct WorkHash {
    size_t operator()(const KernelWork& w) const;
    size_t operator()(const std::vector<double>& v) const;
  };
  std::unordered_map<KernelWork, uint32_t, WorkHash> kernels_;  // work -> id
  std::vector<models::KernelTime> kernel_times_;                // by id
  std::unordered_map<std::vector<double>, CollectiveCost, WorkHash> collectives_;
  // The last kernel costed under each op name (an op of the same name is most often the same
  // work in another micro-batch or layer).
  struct Named {
    KernelWork work;
    uint32_t id = 0;
    bool known = false;
  };
  std::vector<Named> by_name_;
  std::vector<double> key_;
};

// Payload bytes one member of an n-member collective of `bytes` (nccl-tests size) sends on a
// ring (and receives): all-reduce 2(n-1)/n, reduce-scatter, all-gather and all-to-all (n-1)/n,
// broadcast and reduce the buffer.
double member_bytes(workloads::CollectiveKind kind, double bytes, int n);

}  // namespace tessera::analytic
