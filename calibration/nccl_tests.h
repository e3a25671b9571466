// Importer for nccl-tests output (all_reduce_perf and friends): the rows of its results table,
// so measured curves can be compared with tessera's collectives size by size.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace tessera::calibration {

struct NcclTestsRow {
  uint64_t size_bytes = 0;
  uint64_t count = 0;
  std::string type;
  std::string redop;
  double out_of_place_time_us = 0, out_of_place_algbw_gbps = 0, out_of_place_busbw_gbps = 0;
  double in_place_time_us = 0, in_place_algbw_gbps = 0, in_place_busbw_gbps = 0;
};

// Reads the table rows; comment lines ('#') and anything that is not a result row are skipped.
std::vector<NcclTestsRow> parse_nccl_tests(std::istream& log);

// nccl-tests' bus-bandwidth factor for an operation on n ranks: 2(n-1)/n for all-reduce,
// (n-1)/n for reduce-scatter, all-gather and all-to-all, 1 for broadcast and reduce.
double bus_bandwidth_factor(const std::string& op, int ranks);

// An operation's name in one spelling, whatever nccl-tests or a user wrote: "all_reduce",
// "AllReduce", "all-reduce" -> "allreduce" (the spelling bus_bandwidth_factor takes).
std::string op_key(const std::string& name);

}  // namespace tessera::calibration
