#include "platforms/platform_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "models/rtl/registry.h"
#include "workloads/limits.h"

// The shipped platforms are read from the source tree unless $TESSERA_PLATFORMS names another
// folder (platforms/CMakeLists.txt sets this).
#ifndef TESSERA_PLATFORM_DIR
#define TESSERA_PLATFORM_DIR "platforms"
#endif

namespace tessera::platforms {

namespace fs = std::filesystem;

namespace {

std::string compose(const std::string& file, int line, const std::string& key,
                    const std::string& message) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  if (!key.empty()) s += (line > 0 || file != "--set" ? ": " : " ") + key;
  return s + ": " + message;
}

}  // namespace

PlatformFileError::PlatformFileError(std::string file, int line, std::string key,
                                     const std::string& message)
    : std::invalid_argument(compose(file, line, key, message)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      message_(message) {}

namespace {

constexpr const char* kSetting = "--set";
constexpr const char* kDtypes[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};

// ---------------------------------------------------------------------------------------------
// Where things are, and hints.

struct Location {
  std::string file;
  int line = 0;
};

// What reading one platform (file and overrides) has learned so far.
struct LoadState {
  std::map<std::string, Location> locations;  // dotted key -> where it was written
  std::set<std::string> given;                // keys written in the file or set
  std::vector<std::string> settings;          // keys set by overrides, in order
  std::string folder;                         // the platform file's folder ("" for none)
};

// Reading one document: the file errors name, the state to record into.
struct Reader {
  std::string file;  // kSetting for an override
  LoadState* state;
  int gpu_depth = 0;  // `base:` nesting, to stop cycles
};

int line_of(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" for the closest candidate when it is close enough, else "".
std::string hint(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  if (!best.empty() && best_distance <= allowed) return " (did you mean '" + best + "'?)";
  // A prefix: "H100-SXM5" for "H100-SXM5-80GB".
  if (word.size() >= 3)
    for (const std::string& c : candidates)
      if (c.rfind(word, 0) == 0) return " (did you mean '" + c + "'?)";
  return "";
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// Keys may be written with '-' or '_'.
std::string canonical(std::string key) {
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

std::string last_component(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string join_key(const std::string& section, const std::string& key) {
  return section.empty() ? key : section + "." + key;
}

// ---------------------------------------------------------------------------------------------
// One value, converted with errors that name its file, line and key.

struct Value {
  const YAML::Node& node;
  std::string key;
  const Reader& reader;
  int line;

  [[noreturn]] void fail(const std::string& message) const {
    throw PlatformFileError(reader.file, reader.file == kSetting ? 0 : line, key, message);
  }
  std::string shown() const {
    if (node.IsScalar()) return "'" + node.Scalar() + "'";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a mapping";
    return "nothing";
  }
  void scalar(const char* what) const {
    if (!node.IsScalar()) fail(std::string("expected ") + what + ", got " + shown());
  }
  double number() const {
    scalar("a number");
    try {
      return node.as<double>();
    } catch (const YAML::Exception&) {
      fail("expected a number, got " + shown());
    }
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    scalar("an integer");
    int64_t v = 0;
    try {
      v = node.as<int64_t>();
    } catch (const YAML::Exception&) {
      fail("expected an integer, got " + shown());
    }
    if (v < lo && lo == 0) fail("must not be negative, got " + std::to_string(v));
    if (v < lo || v > hi) fail("out of range, got " + std::to_string(v));
    return v;
  }
  bool boolean() const {
    scalar("true or false");
    try {
      return node.as<bool>();
    } catch (const YAML::Exception&) {
      fail("expected true or false, got " + shown());
    }
  }
  std::string string() const {
    scalar("a single value");
    return node.Scalar();
  }
  std::vector<int> ints() const {
    if (!node.IsSequence()) fail("expected a list of integers like [4, 4, 4], got " + shown());
    std::vector<int> out;
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      Value v{item, key + "[" + std::to_string(i) + "]", reader, line_of(item)};
      out.push_back(int(v.integer(INT_MIN, INT_MAX)));
    }
    return out;
  }
  std::vector<std::string> strings() const {
    if (!node.IsSequence()) fail("expected a list of names like [spine0, leaf0], got " + shown());
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      out.push_back(Value{item, key + "[" + std::to_string(i) + "]", reader, line_of(item)}.string());
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// The keys: a setter per leaf, sections are the prefixes of the leaves.

using Setter = std::function<void(PlatformConfig&, const Value&)>;

template <typename T>
using Field = std::function<T&(PlatformConfig&)>;

void add_number(std::map<std::string, Setter>& t, const std::string& key, Field<double> f) {
  t[key] = [f](PlatformConfig& c, const Value& v) { f(c) = v.number(); };
}
void add_int(std::map<std::string, Setter>& t, const std::string& key, Field<int> f) {
  t[key] = [f](PlatformConfig& c, const Value& v) { f(c) = int(v.integer(INT_MIN, INT_MAX)); };
}
void add_u32(std::map<std::string, Setter>& t, const std::string& key, Field<uint32_t> f) {
  t[key] = [f](PlatformConfig& c, const Value& v) { f(c) = uint32_t(v.integer(0, UINT32_MAX)); };
}
void add_u64(std::map<std::string, Setter>& t, const std::string& key, Field<uint64_t> f) {
  t[key] = [f](PlatformConfig& c, const Value& v) { f(c) = uint64_t(v.integer(0, INT64_MAX)); };
}
void add_bool(std::map<std::string, Setter>& t, const std::string& key, Field<bool> f) {
  t[key] = [f](PlatformConfig& c, const Value& v) { f(c) = v.boolean(); };
}
void add_link(std::map<std::string, Setter>& t, const std::string& key, Field<LinkSpec> f) {
  add_number(t, key + ".bandwidth_gb_per_s", [f](PlatformConfig& c) -> double& { return f(c).bandwidth_gb_per_s; });
  add_number(t, key + ".latency_ns", [f](PlatformConfig& c) -> double& { return f(c).latency_ns; });
  add_u32(t, key + ".packet_overhead_bytes", [f](PlatformConfig& c) -> uint32_t& { return f(c).packet_overhead_bytes; });
  add_u32(t, key + ".max_packet_bytes", [f](PlatformConfig& c) -> uint32_t& { return f(c).max_packet_bytes; });
}

// An arbiter or rate limiter: "c++" (or "none"), "rtl", "rtl:NAME", "rtl:PATH" or {rtl: NAME
// or PATH}; a relative path becomes absolute against the file's folder (--set: the working
// directory).
std::string parse_block_choice(const Value& v, const char* native) {
  std::string text;
  if (v.node.IsMap()) {
    if (v.node.size() != 1 || !v.node["rtl"])
      v.fail(std::string("expected ") + native + ", rtl, rtl:NAME, rtl:PATH or {rtl: NAME or PATH}, got a mapping");
    const YAML::Node inner = v.node["rtl"];
    text = "rtl:" + Value{inner, v.key + ".rtl", v.reader, line_of(inner)}.string();
  } else {
    text = v.string();
  }
  if (text == "cxx" || text == "c++" || text == "none") return native;
  if (!rtl::names_rtl(text))
    v.fail("unknown choice '" + text + "'; expected " + native + ", rtl (the built-in block), rtl:NAME or rtl:PATH (docs/cosim.md)");
  return rtl::absolute_value(text, v.reader.file == kSetting ? "" : v.reader.state->folder);
}

void add_arbiter(std::map<std::string, Setter>& t, const std::string& key, Field<ArbiterSpec> f) {
  t[key + ".arbiter"] = [f](PlatformConfig& c, const Value& v) { f(c).arbiter = parse_block_choice(v, "c++"); };
  t[key + ".arbiter_ports"] = [f](PlatformConfig& c, const Value& v) { f(c).ports = v.ints(); };
  add_u32(t, key + ".flit_bytes", [f](PlatformConfig& c) -> uint32_t& { return f(c).flit_bytes; });
}

Topology parse_topology(const Value& v) {
  const std::string name = [&] {
    std::string s = v.string();
    std::replace(s.begin(), s.end(), '_', '-');
    return s;
  }();
  for (Topology t : {Topology::None, Topology::FatTree, Topology::RailOptimized, Topology::Torus,
                     Topology::Dragonfly, Topology::NvlinkNetwork, Topology::LinkList})
    if (name == topology_name(t)) return t;
  v.fail("unknown topology '" + v.node.Scalar() + "'" + hint(name, topology_names()) +
         "; known: " + join(topology_names()));
}

const std::map<std::string, Setter>& leaves() {
  static const std::map<std::string, Setter> table = [] {
    std::map<std::string, Setter> t;
    using C = PlatformConfig;
    t["name"] = [](C& c, const Value& v) { c.name = v.string(); };
    t["description"] = [](C& c, const Value& v) { c.description = v.string(); };
    add_int(t, "nodes", [](C& c) -> int& { return c.nodes; });
    add_u64(t, "gpu_buffer_bytes", [](C& c) -> uint64_t& { return c.gpu_buffer_bytes; });
    add_u64(t, "switch_buffer_bytes", [](C& c) -> uint64_t& { return c.switch_buffer_bytes; });

    // The GPU type (`gpu:` itself and `gpu.base` are read apart: they name a type).
    t["gpu.name"] = [](C& c, const Value& v) { c.gpu.name = v.string(); };
    t["gpu.description"] = [](C&, const Value& v) { v.string(); };  // for the reader only
    for (size_t i = 0; i < 5; ++i)
      add_number(t, std::string("gpu.peak_tflops.") + kDtypes[i],
                 [i](C& c) -> double& { return c.gpu.peak_tflops[i]; });
    add_number(t, "gpu.compute_efficiency", [](C& c) -> double& { return c.gpu.compute_efficiency; });
    add_number(t, "gpu.hbm_capacity_gib", [](C& c) -> double& { return c.gpu.hbm_capacity_gib; });
    add_number(t, "gpu.hbm_bandwidth_gbps", [](C& c) -> double& { return c.gpu.hbm_bandwidth_gbps; });
    add_number(t, "gpu.hbm_efficiency", [](C& c) -> double& { return c.gpu.hbm_efficiency; });
    add_number(t, "gpu.kernel_overhead_us", [](C& c) -> double& { return c.gpu.kernel_overhead_us; });
    add_number(t, "gpu.boost_clock_mhz", [](C& c) -> double& { return c.gpu.boost_clock_mhz; });
    add_int(t, "gpu.sm_count", [](C& c) -> int& { return c.gpu.sm_count; });
    add_int(t, "gpu.nvlink_ports", [](C& c) -> int& { return c.gpu.nvlink_ports; });
    add_number(t, "gpu.ll_max_bandwidth_gbps", [](C& c) -> double& { return c.gpu.ll_max_bandwidth_gbps; });
    add_number(t, "gpu.ll128_max_bandwidth_gbps", [](C& c) -> double& { return c.gpu.ll128_max_bandwidth_gbps; });
    add_number(t, "gpu.ring_fill_chunks", [](C& c) -> double& { return c.gpu.ring_fill_chunks; });
    add_bool(t, "gpu.simple_reads_peer", [](C& c) -> bool& { return c.gpu.simple_reads_peer; });
    add_number(t, "gpu.simple_handshake_us", [](C& c) -> double& { return c.gpu.simple_handshake_us; });
    add_number(t, "gpu.p2p_channel_gbps", [](C& c) -> double& { return c.gpu.p2p_channel_gbps; });
    add_number(t, "gpu.nvlink_port_bandwidth_gbps",
               [](C& c) -> double& { return c.gpu.nvlink_port_bandwidth_gbps; });

    add_int(t, "node.gpus", [](C& c) -> int& { return c.node.gpus; });
    add_int(t, "node.nvlink.switches", [](C& c) -> int& { return c.node.nvlink.switches; });
    t["node.nvlink.links_per_switch"] = [](C& c, const Value& v) {
      c.node.nvlink.links_per_switch = v.ints();
    };
    add_link(t, "node.nvlink.link", [](C& c) -> LinkSpec& { return c.node.nvlink.link; });
    add_number(t, "node.nvlink.switch_latency_ns", [](C& c) -> double& { return c.node.nvlink.switch_latency_ns; });
    add_bool(t, "node.nvlink.in_switch_reduction", [](C& c) -> bool& { return c.node.nvlink.in_switch_reduction; });
    add_bool(t, "node.nvlink.striped", [](C& c) -> bool& { return c.node.nvlink.striped; });
    add_int(t, "node.nvlink.islands", [](C& c) -> int& { return c.node.nvlink.islands; });
    add_arbiter(t, "node.nvswitch", [](C& c) -> ArbiterSpec& { return c.node.nvswitch; });

    add_int(t, "node.pcie.switches", [](C& c) -> int& { return c.node.pcie.switches; });
    add_link(t, "node.pcie.link", [](C& c) -> LinkSpec& { return c.node.pcie.link; });
    add_link(t, "node.pcie.host_link", [](C& c) -> LinkSpec& { return c.node.pcie.host_link; });
    add_number(t, "node.pcie.switch_latency_ns", [](C& c) -> double& { return c.node.pcie.switch_latency_ns; });
    add_number(t, "node.pcie.root_complex_latency_ns", [](C& c) -> double& { return c.node.pcie.root_complex_latency_ns; });

    add_int(t, "node.nics.count", [](C& c) -> int& { return c.node.nics.count; });
    add_number(t, "node.nics.line_rate_gbit_per_s", [](C& c) -> double& { return c.node.nics.line_rate_gbit_per_s; });
    add_u32(t, "node.nics.mtu_bytes", [](C& c) -> uint32_t& { return c.node.nics.mtu_bytes; });
    add_u32(t, "node.nics.header_bytes", [](C& c) -> uint32_t& { return c.node.nics.header_bytes; });
    add_number(t, "node.nics.message_overhead_ns", [](C& c) -> double& { return c.node.nics.message_overhead_ns; });
    add_number(t, "node.nics.latency_ns", [](C& c) -> double& { return c.node.nics.latency_ns; });
    t["node.nics.rate_limiter"] = [](C& c, const Value& v) { c.node.nics.rate_limiter = parse_block_choice(v, "none"); };
    add_number(t, "node.nics.rate_limit_gbit_per_s", [](C& c) -> double& { return c.node.nics.rate_limit_gbit_per_s; });
    add_u64(t, "node.nics.rate_limit_burst_bytes", [](C& c) -> uint64_t& { return c.node.nics.rate_limit_burst_bytes; });
    add_u32(t, "node.nics.flit_bytes", [](C& c) -> uint32_t& { return c.node.nics.flit_bytes; });

    add_number(t, "node.host.memory_gib", [](C& c) -> double& { return c.node.host.memory_gib; });
    add_number(t, "node.host.memory_bandwidth_gb_per_s", [](C& c) -> double& { return c.node.host.memory_bandwidth_gb_per_s; });
    add_bool(t, "node.host.peer_through_memory", [](C& c) -> bool& { return c.node.host.peer_through_memory; });

    t["network.topology"] = [](C& c, const Value& v) { c.network.topology = parse_topology(v); };
    add_int(t, "network.tiers", [](C& c) -> int& { return c.network.tiers; });
    add_int(t, "network.radix", [](C& c) -> int& { return c.network.radix; });
    add_number(t, "network.oversubscription", [](C& c) -> double& { return c.network.oversubscription; });
    add_link(t, "network.link", [](C& c) -> LinkSpec& { return c.network.link; });
    add_number(t, "network.switch_latency_ns", [](C& c) -> double& { return c.network.switch_latency_ns; });
    add_u64(t, "network.switch_buffer_bytes", [](C& c) -> uint64_t& { return c.network.switch_buffer_bytes; });
    add_bool(t, "network.in_network_reduction", [](C& c) -> bool& { return c.network.in_network_reduction; });
    t["network.torus_dims"] = [](C& c, const Value& v) { c.network.torus_dims = v.ints(); };
    add_int(t, "network.dragonfly_groups", [](C& c) -> int& { return c.network.dragonfly_groups; });
    add_int(t, "network.dragonfly_routers_per_group", [](C& c) -> int& { return c.network.dragonfly_routers_per_group; });
    add_int(t, "network.dragonfly_global_links_per_router",
            [](C& c) -> int& { return c.network.dragonfly_global_links_per_router; });
    t["network.switches"] = [](C& c, const Value& v) { c.network.switches = v.strings(); };
    add_arbiter(t, "network.switch", [](C& c) -> ArbiterSpec& { return c.network.switch_arbiter; });
    return t;
  }();
  return table;
}

// Keys read apart from the leaf table: a GPU type by name, its base, the link list.
const std::set<std::string>& special_keys() {
  static const std::set<std::string> keys{"gpu", "gpu.base", "network.links"};
  return keys;
}

bool is_section(const std::string& path) {
  if (path.empty()) return true;
  const auto it = leaves().lower_bound(path + ".");
  return it != leaves().end() && it->first.rfind(path + ".", 0) == 0;
}

// The keys one level below `section`, for hints and error messages.
std::vector<std::string> children(const std::string& section) {
  std::set<std::string> names;
  const std::string prefix = section.empty() ? "" : section + ".";
  auto add = [&](const std::string& key) {
    if (key.rfind(prefix, 0) != 0) return;
    const std::string rest = key.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('.')));
  };
  for (const auto& [key, setter] : leaves()) add(key);
  for (const std::string& key : special_keys()) add(key);
  return {names.begin(), names.end()};
}

// ---------------------------------------------------------------------------------------------
// Files.

std::string builtin_directory() { return TESSERA_PLATFORM_DIR; }

YAML::Node parse_file(const std::string& path) {
  const std::string problem = limits::input_file_problem(path);
  if (!problem.empty()) throw PlatformFileError(path, 0, "", problem);
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return YAML::Load(text.str());
  } catch (const YAML::ParserException& e) {
    throw PlatformFileError(path, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
}

std::string describe_file(const std::string& path) {
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (root.IsMap() && root["description"] && root["description"].IsScalar())
      return root["description"].Scalar();
  } catch (const YAML::Exception& e) {
    return std::string("(cannot be read: ") + e.what() + ")";
  }
  return "";
}

std::vector<std::string> yaml_stems(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path p = entry.path();
    if (entry.is_regular_file(ec) && (p.extension() == ".yaml" || p.extension() == ".yml"))
      names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

// Folders a GPU type name is looked up in, first match wins.
std::vector<std::string> gpu_directories(const std::string& platform_folder) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (!platform_folder.empty()) add((fs::path(platform_folder) / "gpus").string());
  add((fs::path(platform_directory()) / "gpus").string());
  add((fs::path(builtin_directory()) / "gpus").string());
  return dirs;
}

// ---------------------------------------------------------------------------------------------
// Reading.

void set_value(PlatformConfig& c, const std::string& path, const YAML::Node& node, int line,
               Reader& r);

void record(Reader& r, const std::string& path, int line) {
  r.state->given.insert(path);
  if (r.file != kSetting) r.state->locations[path] = Location{r.file, line};
}

// A mapping's keys, each checked (known, not twice) and handed to set_value. `skip` keys are
// read by the caller.
void read_map(PlatformConfig& c, const std::string& section, const YAML::Node& node, int line,
              Reader& r, const std::set<std::string>& skip = {}) {
  if (!node.IsMap()) {
    const Value v{node, section, r, line};
    v.fail("expected a mapping of " + join(children(section)) + ", got " + v.shown());
  }
  std::map<std::string, int> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const int key_line = line_of(it->first);
    const std::string raw = it->first.IsScalar() ? it->first.Scalar() : "?";
    const std::string name = canonical(raw);
    const std::string path = join_key(section, name);
    const auto [first, fresh] = seen.emplace(name, key_line);
    if (!fresh)
      throw PlatformFileError(r.file, key_line, path,
                              "duplicate key (first given at line " + std::to_string(first->second) + ")");
    if (skip.count(name)) continue;
    set_value(c, path, it->second, key_line, r);
  }
}

// `gpu:` as a name, a path, or a mapping (optionally from a `base:` type).
void read_gpu(PlatformConfig& c, const YAML::Node& node, int line, Reader& r);

models::GpuSpec gpu_by_name(const std::string& name, const Value& at, Reader& r) {
  std::string path;
  if (looks_like_path(name)) {
    path = name;
    if (fs::path(name).is_relative() && !r.state->folder.empty())
      path = (fs::path(r.state->folder) / name).string();
    std::error_code ec;
    if (!fs::exists(path, ec)) at.fail("GPU type file " + path + " does not exist");
  } else {
    std::vector<std::string> known;
    for (const std::string& dir : gpu_directories(r.state->folder)) {
      const fs::path candidate = fs::path(dir) / (name + ".yaml");
      std::error_code ec;
      if (path.empty() && fs::exists(candidate, ec)) path = candidate.string();
      for (const std::string& stem : yaml_stems(dir))
        if (std::find(known.begin(), known.end(), stem) == known.end()) known.push_back(stem);
    }
    if (path.empty())
      at.fail("unknown GPU type '" + name + "'" + hint(name, known) + "; known: " + join(known));
  }
  if (r.gpu_depth > 8) at.fail("GPU types name each other as base in a cycle");
  // The GPU file records its own lines under gpu.*; a platform that names it keeps the line of
  // its `gpu:` key for the type as a whole.
  PlatformConfig holder;
  Reader inner{path, r.state, r.gpu_depth + 1};
  const YAML::Node root = parse_file(path);
  read_gpu(holder, root, line_of(root), inner);
  return holder.gpu;
}

void read_gpu(PlatformConfig& c, const YAML::Node& node, int line, Reader& r) {
  const Value whole{node, "gpu", r, line};
  if (node.IsScalar()) {
    c.gpu = gpu_by_name(node.Scalar(), whole, r);
    return;
  }
  if (!node.IsMap())
    whole.fail("expected a GPU type name (gpu: H100-SXM5-80GB) or a mapping, got " + whole.shown());
  std::optional<std::string> base;
  for (auto it = node.begin(); it != node.end(); ++it)
    if (it->first.IsScalar() && canonical(it->first.Scalar()) == "base") {
      const int base_line = line_of(it->first);
      const YAML::Node value = it->second;  // a copy: it->second is a member of a temporary
      const Value v{value, "gpu.base", r, base_line};
      record(r, "gpu.base", base_line);
      base = v.string();
      c.gpu = gpu_by_name(*base, v, r);
      c.gpu.name = *base + "-custom";
    }
  std::set<std::string> before = r.state->given;
  // Keys given in this mapping (not in a base file read above).
  for (auto it = before.begin(); it != before.end();)
    it = it->rfind("gpu.", 0) == 0 ? before.erase(it) : std::next(it);
  r.state->given = before;
  read_map(c, "gpu", node, line, r, {"base"});
  if (!base) {
    // Without a base every value is given: no silent H100 numbers in another GPU.
    for (const auto& [key, setter] : leaves()) {
      if (key.rfind("gpu.", 0) != 0 || key == "gpu.description" || key == "gpu.kernel_overhead_us" ||
          key == "gpu.ll_max_bandwidth_gbps" ||
          key == "gpu.ll128_max_bandwidth_gbps" || key == "gpu.ring_fill_chunks" || key == "gpu.simple_handshake_us" ||
          key == "gpu.p2p_channel_gbps" ||
          key == "gpu.simple_reads_peer" ||
          key == "gpu.boost_clock_mhz")
        continue;
      if (!r.state->given.count(key))
        throw PlatformFileError(r.file, r.file == kSetting ? 0 : line, key,
                                "missing (a GPU type without base: gives every value)");
    }
  }
}

void read_links(PlatformConfig& c, const YAML::Node& node, int line, Reader& r) {
  const Value whole{node, "network.links", r, line};
  if (!node.IsSequence())
    whole.fail("expected a list of links like [{from: leaf0, to: node0.nic0}], got " + whole.shown());
  c.network.links.clear();
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string key = "network.links[" + std::to_string(i) + "]";
    const int item_line = line_of(item);
    record(r, key, item_line);
    if (!item.IsMap())
      Value{item, key, r, item_line}.fail("expected a mapping with from, to and optionally "
                                          "bandwidth_gb_per_s, latency_ns");
    ExplicitLink link;
    link.line = item_line;
    std::map<std::string, int> seen;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string name = canonical(it->first.Scalar());
      const int key_line = line_of(it->first);
      const std::string path = key + "." + name;
      const YAML::Node value = it->second;  // a copy: it->second is a member of a temporary
      const Value v{value, path, r, key_line};
      const auto [first, fresh] = seen.emplace(name, key_line);
      if (!fresh) v.fail("duplicate key (first given at line " + std::to_string(first->second) + ")");
      if (it->second.IsNull()) v.fail("has no value");
      record(r, path, key_line);
      if (name == "from") link.from = v.string();
      else if (name == "to") link.to = v.string();
      else if (name == "bandwidth_gb_per_s") link.bandwidth_gb_per_s = v.number();
      else if (name == "latency_ns") link.latency_ns = v.number();
      else
        v.fail("unknown key" + hint(name, {"from", "to", "bandwidth_gb_per_s", "latency_ns"}) +
               "; a link has from, to, bandwidth_gb_per_s, latency_ns");
    }
    for (const char* required : {"from", "to"})
      if (!seen.count(required))
        throw PlatformFileError(r.file, r.file == kSetting ? 0 : item_line, key + "." + required,
                                "missing: a link names both ends");
    c.network.links.push_back(link);
  }
}

void set_value(PlatformConfig& c, const std::string& path, const YAML::Node& node, int line,
               Reader& r) {
  const Value v{node, path, r, line};
  const bool special = special_keys().count(path) > 0;
  const auto leaf = leaves().find(path);
  const bool section = is_section(path);
  if (!special && leaf == leaves().end() && !section) {
    const size_t dot = path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
    const std::vector<std::string> known = children(parent);
    const std::string suggestion = hint(last_component(path), known);
    v.fail("unknown key" + (!suggestion.empty() ? suggestion
                                                : "; " + (parent.empty() ? std::string("a platform") : parent) +
                                                      " has " + join(known)));
  }
  if (node.IsNull()) v.fail("has no value");
  record(r, path, line);
  if (path == "gpu") return read_gpu(c, node, line, r);
  if (path == "gpu.base") {
    // Only meaningful inside a GPU mapping, where read_gpu takes it first.
    c.gpu = gpu_by_name(v.string(), v, r);
    return;
  }
  if (path == "network.links") return read_links(c, node, line, r);
  if (leaf != leaves().end()) return leaf->second(c, v);
  read_map(c, path, node, line, r);
}

// ---------------------------------------------------------------------------------------------
// Values derived from others: they follow their source unless given apart.

struct Derived {
  std::string key;
  std::function<double(const PlatformConfig&)> get;
  std::function<void(PlatformConfig&, double)> set;
  std::function<double(const PlatformConfig&)> source;
};

std::vector<Derived> derived_values(const PlatformConfig& c) {
  using C = PlatformConfig;
  std::vector<Derived> d;
  d.push_back({"node.nvlink.link.bandwidth_gb_per_s",
               [](const C& p) { return p.node.nvlink.link.bandwidth_gb_per_s; },
               [](C& p, double v) { p.node.nvlink.link.bandwidth_gb_per_s = v; },
               [](const C& p) { return p.gpu.nvlink_port_bandwidth_gbps; }});
  d.push_back({"network.link.bandwidth_gb_per_s",
               [](const C& p) { return p.network.link.bandwidth_gb_per_s; },
               [](C& p, double v) { p.network.link.bandwidth_gb_per_s = v; },
               [](const C& p) { return p.node.nics.line_rate_gbit_per_s / 8.0; }});
  d.push_back({"network.link.packet_overhead_bytes",
               [](const C& p) { return double(p.network.link.packet_overhead_bytes); },
               [](C& p, double v) { p.network.link.packet_overhead_bytes = uint32_t(v); },
               [](const C& p) { return double(p.node.nics.header_bytes); }});
  d.push_back({"network.link.max_packet_bytes",
               [](const C& p) { return double(p.network.link.max_packet_bytes); },
               [](C& p, double v) { p.network.link.max_packet_bytes = uint32_t(v); },
               [](const C& p) { return double(p.node.nics.mtu_bytes); }});
  for (size_t i = 0; i < c.network.links.size(); ++i) {
    const std::string key = "network.links[" + std::to_string(i) + "]";
    d.push_back({key + ".bandwidth_gb_per_s",
                 [i](const C& p) { return p.network.links[i].bandwidth_gb_per_s; },
                 [i](C& p, double v) { p.network.links[i].bandwidth_gb_per_s = v; },
                 [](const C& p) { return p.network.link.bandwidth_gb_per_s; }});
    d.push_back({key + ".latency_ns",
                 [i](const C& p) { return p.network.links[i].latency_ns; },
                 [i](C& p, double v) { p.network.links[i].latency_ns = v; },
                 [](const C& p) { return p.network.link.latency_ns; }});
  }
  return d;
}

// What a file leaves out, where the description types have no useful default: links.
void file_defaults(PlatformConfig& c) {
  LinkSpec& nvlink = c.node.nvlink.link;  // bandwidth: the GPU type's per-port rate
  nvlink.latency_ns = 150.0;
  nvlink.packet_overhead_bytes = 32;  // 128 data bytes behind two 16-byte flits (80% of line rate)
  nvlink.max_packet_bytes = 128;
  // PCIe gen5 x16: 32 GT/s x 16 lanes x 128/130; 256-byte TLP payload, ~24 bytes framing,
  // sequence number, header and LCRC.
  const LinkSpec pcie{63.0, 50.0, 24, 256};
  c.node.pcie.link = pcie;
  c.node.pcie.host_link = pcie;
  c.network.link.latency_ns = 50.0;  // about 10 m of cable
}

// After a file: every derived value not written takes its source's.
void fill_derived(PlatformConfig& c, const std::set<std::string>& given) {
  for (const Derived& d : derived_values(c))
    if (!given.count(d.key)) d.set(c, d.source(c));
}

// One override, keeping derived values that equalled their source in step with it.
void apply(PlatformConfig& c, const std::string& raw_key, const std::string& text, LoadState& state) {
  const std::string key = canonical(raw_key);
  if (key.empty()) throw PlatformFileError(kSetting, 0, "", "expected KEY=VALUE, got '=" + text + "'");
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw PlatformFileError(kSetting, 0, key, "cannot read the value '" + text + "': " + e.msg);
  }
  std::vector<bool> follows;
  const std::vector<Derived> before = derived_values(c);
  for (const Derived& d : before) follows.push_back(d.get(c) == d.source(c));
  Reader r{kSetting, &state};
  set_value(c, key, node, 0, r);
  state.settings.push_back(key);
  const std::vector<Derived> after = derived_values(c);
  for (size_t i = 0; i < after.size(); ++i) {
    const Derived& d = after[i];
    if (d.key.rfind(key + "[", 0) == 0 || d.key.rfind(key + ".", 0) == 0) {
      // Inside what was just set: a value not written takes its source's, as in a file.
      if (!state.given.count(d.key)) d.set(c, d.source(c));
    } else if (i < before.size() && follows[i] && d.key != key && before[i].key == d.key) {
      d.set(c, d.source(c));
    }
  }
}

// Reads a platform file without validating it.
PlatformConfig read_platform_file(const std::string& path, LoadState& state) {
  const YAML::Node root = parse_file(path);
  state.folder = fs::path(path).parent_path().string();
  if (state.folder.empty()) state.folder = ".";
  PlatformConfig c;
  file_defaults(c);
  c.name = fs::path(path).stem().string();
  c.source = path;
  Reader r{path, &state};
  const int root_line = std::max(1, line_of(root));
  state.locations[""] = Location{path, root_line};
  if (root.IsNull()) throw PlatformFileError(path, 1, "", "the file is empty");
  if (!root.IsMap())
    throw PlatformFileError(path, root_line, "",
                            "expected a mapping of " + join(children("")) + " at the top");
  read_map(c, "", root, root_line, r);
  if (!state.given.count("gpu"))
    throw PlatformFileError(path, root_line, "gpu",
                            "missing: a platform names its GPU type (gpu: H100-SXM5-80GB)");
  fill_derived(c, state.given);
  return c;
}

// A validation error, placed on the override or the file line it concerns.
PlatformFileError locate(const PlatformError& e, const LoadState& state) {
  const std::string& key = e.key();
  auto related = [&](const std::string& set) {
    return set == key || key.rfind(set + ".", 0) == 0 || key.rfind(set + "[", 0) == 0 ||
           set.rfind(key + ".", 0) == 0 || set.rfind(key + "[", 0) == 0;
  };
  for (auto it = state.settings.rbegin(); it != state.settings.rend(); ++it)
    if (related(*it))
      return PlatformFileError(kSetting, 0, *it, (*it == key ? "" : key + ": ") + e.what());
  std::string path = key;
  while (true) {
    const auto found = state.locations.find(path);
    if (found != state.locations.end())
      return PlatformFileError(found->second.file, found->second.line, key, e.what());
    if (path.empty()) break;
    const size_t cut = std::max(path.rfind('.') == std::string::npos ? 0 : path.rfind('.'),
                                path.rfind('[') == std::string::npos ? 0 : path.rfind('['));
    path = path.substr(0, cut);
  }
  return PlatformFileError(kSetting, 0, key, e.what());
}

void validate_located(const PlatformConfig& c, const LoadState& state) {
  try {
    c.validate();
  } catch (const PlatformError& e) {
    throw locate(e, state);
  }
}

std::pair<std::string, std::string> split_assignment(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos)
    throw PlatformFileError(kSetting, 0, "", "expected KEY=VALUE, got '" + assignment + "'");
  auto trim = [](std::string s) {
    const size_t b = s.find_first_not_of(" \t");
    const size_t e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  return {trim(assignment.substr(0, eq)), trim(assignment.substr(eq + 1))};
}

}  // namespace

std::string platform_directory() {
  if (const char* env = std::getenv("TESSERA_PLATFORMS"); env && *env) return env;
  return builtin_directory();
}

PlatformConfig load_platform_file(const std::string& path) {
  LoadState state;
  PlatformConfig c = read_platform_file(path, state);
  validate_located(c, state);
  return c;
}

PlatformConfig load_platform(const std::string& name_or_path,
                             const std::vector<std::string>& settings) {
  std::string path = name_or_path;
  std::error_code ec;
  if (!looks_like_path(name_or_path) && !fs::is_regular_file(name_or_path, ec)) {
    const fs::path shipped = fs::path(platform_directory()) / (name_or_path + ".yaml");
    if (!fs::exists(shipped, ec)) {
      std::vector<std::string> known;
      for (const PlatformInfo& p : list_platforms()) known.push_back(p.name);
      throw PlatformFileError(name_or_path, 0, "",
                              "no such platform file, and no shipped platform of that name" +
                                  hint(name_or_path, known) + "; shipped: " + join(known));
    }
    path = shipped.string();
  }
  LoadState state;
  PlatformConfig c = read_platform_file(path, state);
  for (const std::string& s : settings) {
    const auto [key, value] = split_assignment(s);
    apply(c, key, value, state);
  }
  validate_located(c, state);
  return c;
}

std::vector<PlatformInfo> list_platforms() {
  std::vector<PlatformInfo> out;
  const std::string dir = platform_directory();
  for (const std::string& stem : yaml_stems(dir)) {
    const std::string path = (fs::path(dir) / (stem + ".yaml")).string();
    out.push_back({stem, describe_file(path), path});
  }
  return out;
}

void apply_setting(PlatformConfig& config, const std::string& key, const std::string& value) {
  LoadState state;
  state.folder = config.source.empty() ? "" : fs::path(config.source).parent_path().string();
  apply(config, key, value, state);
}

void apply_setting(PlatformConfig& config, const std::string& assignment) {
  const auto [key, value] = split_assignment(assignment);
  apply_setting(config, key, value);
}

models::GpuSpec load_gpu(const std::string& name_or_path) {
  LoadState state;
  Reader r{"", &state};
  YAML::Node name(name_or_path);
  const Value v{name, "gpu", r, 0};
  try {
    PlatformConfig holder;
    holder.gpu = gpu_by_name(name_or_path, v, r);
    return holder.gpu;
  } catch (const PlatformFileError& e) {
    if (!e.file().empty()) throw;
    throw PlatformFileError(name_or_path, 0, "", e.message());
  }
}

std::vector<std::string> list_gpus() {
  std::vector<std::string> names;
  for (const std::string& dir : gpu_directories(""))
    for (const std::string& stem : yaml_stems(dir))
      if (std::find(names.begin(), names.end(), stem) == names.end()) names.push_back(stem);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tessera::platforms
