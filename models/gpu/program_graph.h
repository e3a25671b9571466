// The dependency graph of a program, built once per distinct Program and shared by every rank
// that runs it: for each op, how many ops it waits for (its stream predecessor and its explicit
// dependencies) and which ops wait for it.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/program.h"

namespace tessera::models {

struct ProgramGraph {
  explicit ProgramGraph(const workloads::Program& program);

  std::vector<uint32_t> waits;          // per op: number of ops it waits for
  std::vector<uint32_t> successor_begin;  // CSR offsets, size ops + 1
  std::vector<uint32_t> successors;
  // Per op: a collective's call number on its slot (kNoCall for other ops), number_calls below.
  std::vector<uint32_t> calls;
};

constexpr uint32_t kNoCall = UINT32_MAX;

// Per op of `program`: a collective's call number, counting in program order the collectives
// whose slots have the same key (a rank's calls on one communicator, as every member numbers
// them), and kNoCall for other ops. `key_of_slot`: each slot's key (a rank's communicators);
// empty: each slot its own.
std::vector<uint32_t> number_calls(const workloads::Program& program, const std::vector<int>& key_of_slot);

// A rank's call numbers on its communicators: its program's numbering by slot
// (ProgramGraph::calls) where its slots name distinct communicators, else its own, numbered into
// `own`.
const std::vector<uint32_t>& rank_calls(const workloads::Rank& rank, const ProgramGraph& graph,
                                        std::vector<uint32_t>& own);

}  // namespace tessera::models
