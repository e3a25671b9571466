#include "calibration/nccl_tests.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace tessera::calibration {

std::vector<NcclTestsRow> parse_nccl_tests(std::istream& log) {
  // A result row: size count type redop root time algbw busbw #wrong time algbw busbw #wrong
  // (all_gather and friends print "none" for redop and -1 for root).
  std::vector<NcclTestsRow> rows;
  std::string line;
  while (std::getline(log, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream in(line);
    NcclTestsRow r;
    std::string root, wrong_oop, wrong_ip;
    if (!(in >> r.size_bytes >> r.count >> r.type >> r.redop >> root >> r.out_of_place_time_us >>
          r.out_of_place_algbw_gbps >> r.out_of_place_busbw_gbps >> wrong_oop >>
          r.in_place_time_us >> r.in_place_algbw_gbps >> r.in_place_busbw_gbps))
      continue;
    rows.push_back(r);
  }
  return rows;
}

double bus_bandwidth_factor(const std::string& op, int n) {
  if (n <= 0) throw std::invalid_argument("rank count must be positive");
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "reducescatter" || op == "allgather" || op == "alltoall") return double(n - 1) / n;
  if (op == "broadcast" || op == "reduce" || op == "sendrecv") return 1.0;
  throw std::invalid_argument("unknown collective '" + op + "'");
}

std::string op_key(const std::string& name) {
  std::string key;
  for (char c : name)
    if (c != '_' && c != '-') key += char(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

}  // namespace tessera::calibration
