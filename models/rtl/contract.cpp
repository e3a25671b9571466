#include "models/rtl/contract.h"

#include <cstdio>
#include <exception>

namespace tessera::rtl {
namespace {

std::exception_ptr& raised() {
  static std::exception_ptr error;
  return error;
}

}  // namespace

void contract_broken(const std::string& block, const std::string& port, const char* kind, uint64_t cycle,
                     const std::string& rule, const std::string& detail) {
  const ContractError error("RTL block " + block + " at " + port + " broke the " + kind + " contract at cycle " +
                            std::to_string(cycle) + " (t = " + sc_core::sc_time_stamp().to_string() + "): " + rule +
                            ": " + detail + " (docs/cosim.md)");
  raised() = std::make_exception_ptr(error);
  throw error;
}

void rethrow_contract_error() {
  if (raised()) std::rethrow_exception(raised());
}

std::string describe_mask(uint64_t mask) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(mask));
  std::string s = hex;
  if (mask == 0) return s + " (none)";
  std::string inputs;
  int count = 0;
  for (int i = 0; i < 64; ++i)
    if (mask >> i & 1) inputs += (count++ ? ", " : "") + std::to_string(i);
  return s + (count > 1 ? " (inputs " : " (input ") + inputs + ")";
}

}  // namespace tessera::rtl
