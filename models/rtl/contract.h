// A block that breaks its pin contract (docs/cosim.md) ends the run with a ContractError whose
// message names the block, the port it sits at, the cycle and the rule.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <systemc>

namespace tessera::rtl {

class ContractError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raises the ContractError "RTL block BLOCK at PORT broke the KIND contract at cycle N
// (t = TIME): RULE: DETAIL".
[[noreturn]] void contract_broken(const std::string& block, const std::string& port, const char* kind,
                                  uint64_t cycle, const std::string& rule, const std::string& detail);

// SystemC reports an exception thrown in a process as an sc_report from sc_start(): this
// rethrows the ContractError a transactor raised, if one did, as itself.
void rethrow_contract_error();

// "0x6 (inputs 1, 2)" for a bit mask.
std::string describe_mask(uint64_t mask);

}  // namespace tessera::rtl
