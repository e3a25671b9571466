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
};

}  // namespace tessera::models
