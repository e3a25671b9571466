// The RTL blocks built into this binary, and how a platform file's value names one.
//
//   "rtl"           the kind's built-in block (arbiter: rr_arbiter; rate limiter: token_bucket)
//   "rtl:NAME"      a block by its tessera_rtl_block() name
//   "rtl:PATH"      the block verilated from that Verilog file (a value with a '/' or ending in
//                   .sv, .v or .vh); the file must still read as it did when it was verilated
//
// A binary built without Verilator has no blocks: every lookup fails with kNotBuilt.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/rtl/block.h"

namespace tessera::rtl {

constexpr const char* kNotBuilt =
    "RTL co-simulation not built: install Debian package verilator and reconfigure";

// Whether this binary was built with Verilator (CMake option TESSERA_RTL).
bool built();

// Every block, in the order the build registered them.
const std::vector<BlockInfo>& blocks();
// Adds a block (the generated registration code and tests call this before any lookup).
void add_block(BlockInfo block);

// The kind's built-in block name ("rr_arbiter", "token_bucket").
const char* default_block(BlockKind kind);

// Whether a value names an RTL block ("rtl" or "rtl:..."), and what follows "rtl:" ("" for
// plain "rtl").
bool names_rtl(const std::string& value);
std::string rtl_target(const std::string& value);
// A value with its path made absolute against `folder` (a file's folder, or "" for the working
// directory); names and "rtl" are returned as they are.
std::string absolute_value(const std::string& value, const std::string& folder);

// The block a value names, of `kind`. Throws std::invalid_argument with one line: kNotBuilt,
// an unknown name (with the names built), a file that no block was verilated from, a file
// changed since, a block of another kind.
const BlockInfo& resolve(BlockKind kind, const std::string& value);

}  // namespace tessera::rtl
