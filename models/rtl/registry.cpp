#include "models/rtl/registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::rtl {

// Defined by the code models/rtl/CMakeLists.txt generates (rtl_blocks.cpp), or by
// no_blocks.cpp in a build without Verilator.
void register_built_blocks();
extern const bool kBuiltWithVerilator;

namespace fs = std::filesystem;

namespace {

std::vector<BlockInfo>& table() {
  static std::vector<BlockInfo> blocks;
  return blocks;
}

bool registering = false;

const std::vector<BlockInfo>& registered() {
  static const bool once = [] {
    registering = true;
    register_built_blocks();
    registering = false;
    return true;
  }();
  (void)once;
  return table();
}

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const char* suffix) {
    const std::string x(suffix);
    return s.size() > x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".sv") || ends_with(".v") || ends_with(".vh");
}

std::string names(BlockKind kind) {
  std::string out;
  for (const BlockInfo& b : registered())
    if (b.kind == kind) out += (out.empty() ? "" : ", ") + b.name;
  return out.empty() ? "none" : out;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::path(path), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

const BlockInfo& of_kind(const BlockInfo& b, BlockKind kind) {
  if (b.kind != kind)
    throw std::invalid_argument("RTL block " + b.name + " is a " + block_kind_name(b.kind) + ", not a " +
                                block_kind_name(kind) + " (" + block_kind_name(kind) + "s built: " + names(kind) +
                                ")");
  return b;
}

}  // namespace

const char* block_kind_name(BlockKind kind) {
  return kind == BlockKind::Arbiter ? "arbiter" : "rate limiter";
}

bool built() { return kBuiltWithVerilator; }

const std::vector<BlockInfo>& blocks() { return registered(); }

void add_block(BlockInfo block) {
  if (!registering) registered();  // the build's own blocks first
  for (const BlockInfo& b : table())
    if (b.name == block.name) throw std::logic_error("RTL block " + block.name + " registered twice");
  table().push_back(std::move(block));
}

const char* default_block(BlockKind kind) {
  return kind == BlockKind::Arbiter ? "rr_arbiter" : "token_bucket";
}

bool names_rtl(const std::string& value) { return value == "rtl" || value.rfind("rtl:", 0) == 0; }

std::string rtl_target(const std::string& value) {
  if (value.rfind("rtl:", 0) != 0) return "";
  std::string t = value.substr(4);
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  return t;
}

std::string absolute_value(const std::string& value, const std::string& folder) {
  const std::string target = rtl_target(value);
  if (target.empty() || !looks_like_path(target) || fs::path(target).is_absolute()) return value;
  const fs::path base = folder.empty() ? fs::current_path() : fs::absolute(folder);
  return "rtl:" + (base / target).lexically_normal().string();
}

const BlockInfo& resolve(BlockKind kind, const std::string& value) {
  if (!built()) throw std::invalid_argument(kNotBuilt);
  std::string target = rtl_target(value);
  if (target.empty()) target = default_block(kind);
  if (!looks_like_path(target)) {
    for (const BlockInfo& b : registered())
      if (b.name == target) return of_kind(b, kind);
    throw std::invalid_argument("no RTL block named '" + target + "' in this build (" + block_kind_name(kind) +
                                "s built: " + names(kind) + "; docs/cosim.md adds one)");
  }
  std::error_code ec;
  if (!fs::is_regular_file(target, ec))
    throw std::invalid_argument(target + ": no such Verilog file");
  const std::string path = canonical(target);
  std::vector<const BlockInfo*> found;
  for (const BlockInfo& b : registered())
    if (b.kind == kind && canonical(b.source) == path) found.push_back(&b);
  if (found.empty())
    throw std::invalid_argument(target + " was not verilated into this build: add tessera_rtl_block(NAME KIND " +
                                std::string(kind == BlockKind::Arbiter ? "arbiter" : "rate_limiter") +
                                " SOURCES " + path + ") to a file named by -DTESSERA_RTL_BLOCKS and rebuild (docs/cosim.md)");
  if (found.size() > 1) {
    std::string list;
    for (const BlockInfo* b : found) list += (list.empty() ? "" : ", ") + b->name;
    throw std::invalid_argument(target + " was verilated into several blocks (" + list + "): name one (rtl:NAME)");
  }
  std::ifstream in(target, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str() != found[0]->source_text)
    throw std::invalid_argument(target + " changed since it was verilated into block " + found[0]->name +
                                ": rebuild (make build) so that tessera runs what the file says");
  return *found[0];
}

}  // namespace tessera::rtl
