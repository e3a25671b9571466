// A small executor of per-rank programs, in plain C++: the closed-form and property tests use it
// (the SystemC platform is the real one; both must agree on the numbers these tests hold).
//
// Semantics (the contract every executor of a Job keeps):
//  - ops of one stream run in order; an op also waits for its explicit dependencies;
//  - streams run concurrently (no contention: this executor does not model shared resources);
//  - the k-th collective a rank issues on a communicator (in program order) meets the k-th of
//    every other member; it starts when the last member reaches it and ends cost later;
//  - a Send starts when it is ready and does not wait for its receiver (eager);
//  - a Recv ends at max(ready, matching Send's start + cost); it matches the Send from its peer
//    with the same tag (in order, if a tag repeats).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "workloads/program.h"

namespace tessera::workloads {

// Duration of an op on a rank, in any time unit. For collectives: once every member is there;
// for Send/Recv: the transfer.
using OpDuration = std::function<double(const Job&, const Rank&, const Op&)>;

struct TimelineResult {
  bool completed = false;
  double makespan = 0;                    // latest finish over all ranks
  std::vector<double> finish;             // per rank
  std::vector<std::vector<double>> op_start, op_end;  // per rank, per op (when recorded)
  std::string deadlock;                   // when not completed: the stuck ranks and ops
};

// Runs the job. record_ops keeps every op's start and end (memory: ranks x ops).
TimelineResult run_timeline(const Job& job, const OpDuration& duration, bool record_ops = false);

}  // namespace tessera::workloads
