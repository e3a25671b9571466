// Runs one simulation: builds the platform for a job, executes every rank's program, and
// collects what the report needs. SystemC elaborates once per process, so simulate() may be
// called once per process (tests run each scenario in a child process).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/activity.h"
#include "models/gpu/kernel_timer.h"
#include "platforms/platform.h"
#include "workloads/program.h"

namespace tessera::app {

struct SimulationOptions {
  uint64_t chunk_bytes = 128 * 1024;     // fabric chunk size (sets collectives.chunk_bytes)
  models::CollectiveEngineConfig collectives;  // algorithm/protocol overrides, node size, costs
  bool trace = false;                    // record op spans and link activity for a trace
  double trace_bucket_us = 10.0;         // link counter resolution in the trace
  bool progress = false;                 // print progress on stderr
  uint64_t iterations = 1;               // every rank runs its program this many times
  platforms::Fidelity fidelity = platforms::Fidelity::Packet;
  std::string fidelity_reason;           // why `--fidelity auto` picked it ("" when chosen)
  // The compute model every GPU times its kernels with (null: the models' roofline).
  std::shared_ptr<const models::KernelTimer> kernel_timer;
  // The platform's graph and routes when the caller has them (build_platform); else computed.
  std::shared_ptr<const platforms::RoutedTopology> topology;
  // A VCD waveform of every RTL block's pins and its port's signals ("" for none): written
  // whole after the run, and also when a block breaks its contract (up to that cycle).
  std::string vcd;
  // Symmetry (workloads/replicas.h): simulate one group of each kind of replica group and let
  // the others' GPUs replay its communication; checked as it runs (SymmetryBroken otherwise).
  bool symmetry = false;
  // Called with the elaborated platform before the simulation starts (tests attach observers).
  std::function<void(platforms::Platform&)> inspect;
};

// An RTL block at a port (docs/cosim.md).
struct RtlPortResult {
  std::string port;   // the egress port ("platform.node0.nvswitch.out3")
  std::string block;  // the block's name
  std::string kind;   // "arbiter", "rate limiter"
  double period_s = 0;      // its clock
  uint64_t cycles = 0;      // rising edges evaluated (the reset cycle included)
  uint64_t decisions = 0;   // grants, or chunks allowed
};

struct RankResult {
  int rank = 0;
  double finish_s = 0;
  double compute_s = 0;
  double exposed_communication_s = 0;
  double overlapped_communication_s = 0;
  double idle_s = 0;
  std::array<double, models::kComputeCauses> compute_by_cause{};  // seconds, by ComputeCause
  // The iteration by cause (models::TimeCause), seconds: adds up to the iteration time.
  std::array<double, models::kTimeCauses> time_by_cause{};
  std::vector<models::CauseSpan> cause_spans;  // when tracing
  uint64_t ops = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  std::vector<models::OpSpan> spans;  // when tracing
};

struct LinkResult {
  std::string name;
  std::string kind;
  double bandwidth_bytes_per_s = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  double busy_s = 0;
  std::vector<uint64_t> activity;  // bytes per trace bucket, when tracing
};

struct StuckOp {
  int rank = 0;
  uint32_t op = 0;
  std::string name;
  std::string what;
  std::vector<int> absent_ranks;  // members that never joined the collective
};

// Times are per iteration (the mean over `iterations`); counts (ops, bytes, transactions) are
// over the whole run.
struct SimulationResult {
  uint64_t iterations = 1;
  double iteration_time_s = 0;
  std::vector<RankResult> ranks;
  std::vector<LinkResult> links;
  bool deadlocked = false;
  std::vector<StuckOp> stuck;
  // Packet fidelity, a run that cannot finish: chunks left in switch buffers, each waiting for
  // room in the next (a cycle of full buffers: routes that can deadlock).
  uint64_t chunks_held_in_switches = 0;
  uint64_t transactions = 0;   // fabric hop transactions (one chunk across one link; in flow
                               // fidelity one flow across one link)
  uint64_t flows = 0;          // flow fidelity: flows started
  uint64_t links_never_filling = 0;  // flow fidelity: network links the allocator left out
                                     // (Routing::links_that_cannot_fill)
  platforms::Fidelity fidelity = platforms::Fidelity::Packet;
  std::string fidelity_reason;  // SimulationOptions::fidelity_reason
  uint64_t payloads_created = 0;
  int gpus_simulated = 0;      // with symmetry: GPUs that ran their programs (the others
                               // replayed one of them); 0: every GPU ran its own
  int gpus_parted = 0;         // with symmetry: replaying GPUs that parted from their
                               // representatives and ran their own programs from there
  int gpus_followed_parted = 0;  // with symmetry: replaying GPUs that came apart alike with one
                                 // that parted, and replayed it from there
  double symmetry_skew_s = 0;  // with symmetry: op by op, the farthest a replaying GPU's
                               // communication completed from its representative's, summed
  int quiet_nodes = 0;         // with symmetry: nodes whose calls among their own GPUs were left
                               // out (workloads::quiet_nodes); their links mirror another node's
  int echo_nodes = 0;          // with symmetry: nodes whose simulated GPU made their calls among
                               // their GPUs alone (workloads::echo_nodes)
  int rail_images = 0;         // with symmetry: replaying GPUs whose calls across the network were
                               // images of another GPU's of their node (sc_main/rail_images.h)
  int classes = 0;             // analytic fidelity: ranks costed (one per class of equivalent ranks)
  double wall_s = 0;
  double cpu_s = 0;            // analytic fidelity: CPU time of the model
  bool huge_pages = false;     // the allocator asked the kernel for 2 MiB pages (huge_pages.h)
  std::vector<RtlPortResult> rtl;  // the RTL blocks at ports, none without
  double simulated_s = 0;          // simulated time at the end (the clocks' span, all iterations)
  // The same run without RTL (reference_run.h), when it was made: its wall and iteration time.
  bool has_reference = false;
  double reference_wall_s = 0, reference_iteration_time_s = 0;
};

// A run that cannot finish, where a command stops on it (exit status 3, kDeadlock); the text
// is describe_deadlock's.
struct CannotFinish : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run with symmetry in which a replaying GPU's communication completed at another time than
// its representative's (an asymmetric fabric, or placement): its result would not be the full
// run's, so it stops; the same run without symmetry is the answer.
struct SymmetryBroken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

SimulationResult simulate(const platforms::PlatformConfig& platform, const workloads::Job& job,
                          const SimulationOptions& options);

// Analytic fidelity (analytic/iteration.h): the same job costed without simulation, in the
// simulation's result type (no links). `topology`: the platform's routes (point-to-point
// transfers take their paths). A job that cannot finish is `deadlocked`, its line in `stuck`.
SimulationResult cost_analytically(const platforms::PlatformConfig& platform,
                                   const platforms::RoutedTopology& topology,
                                   const workloads::Job& job, const SimulationOptions& options);

// One line per stuck rank, for the error message of a run that cannot finish.
std::string describe_deadlock(const SimulationResult& result);

}  // namespace tessera::app
