#include "workloads/yaml_reader.h"

#include "workloads/limits.h"

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace tessera::workloads {

std::string where(const std::string& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1);
}

std::string canonical_key(std::string key) {
  for (char& c : key)
    if (c == '_') c = '-';
  return key;
}

YamlMap::YamlMap(const YAML::Node& node, std::string file, std::string what)
    : node_(node), file_(std::move(file)), what_(std::move(what)) {
  if (!node_.IsMap())
    throw InputError(workloads::where(file_, node_) + ": " + what_ + " must be a mapping");
}

bool YamlMap::has(const std::string& key) const {
  return get_const(canonical_key(key)).has_value();
}

std::optional<YAML::Node> YamlMap::get_const(const std::string& key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (canonical_key(it->first.as<std::string>()) == key) {
      if (it->second.IsNull()) return std::nullopt;
      return it->second;
    }
  return std::nullopt;
}

// Keys are asked for in either spelling ('-' or '_'), as they may be written.
std::optional<YAML::Node> YamlMap::get(const std::string& key) {
  read_.insert(canonical_key(key));
  return get_const(canonical_key(key));
}

std::string YamlMap::where(const std::string& key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (canonical_key(it->first.as<std::string>()) == canonical_key(key))
      return workloads::where(file_, it->first);
  return workloads::where(file_, node_);
}

void YamlMap::fail(const std::string& key, const std::string& message) const {
  throw InputError(where(key) + ": key '" + key + "': " + message);
}

std::string YamlMap::string(const std::string& key, const std::string& fallback) {
  std::optional<YAML::Node> found = get(key);
  if (!found) return fallback;
  const YAML::Node& n = *found;
  if (!n.IsScalar()) fail(key, "expected a single value");
  return n.Scalar();
}

int64_t YamlMap::integer(const std::string& key, int64_t fallback) {
  std::optional<YAML::Node> found = get(key);
  if (!found) return fallback;
  const YAML::Node& n = *found;
  try {
    return n.as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(key, "expected an integer, got '" + (n.IsScalar() ? n.Scalar() : "...") + "'");
  }
}

double YamlMap::number(const std::string& key, double fallback) {
  std::optional<YAML::Node> found = get(key);
  if (!found) return fallback;
  const YAML::Node& n = *found;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    fail(key, "expected a number, got '" + (n.IsScalar() ? n.Scalar() : "...") + "'");
  }
}

bool YamlMap::boolean(const std::string& key, bool fallback) {
  std::optional<YAML::Node> found = get(key);
  if (!found) return fallback;
  const YAML::Node& n = *found;
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail(key, "expected true or false, got '" + (n.IsScalar() ? n.Scalar() : "...") + "'");
  }
}

template <typename T>
T YamlMap::in_range(const std::string& key, T value, const limits::Range& range) const {
  const std::string problem = limits::problem(double(value), range);
  if (has(key) && !problem.empty()) fail(key, problem);
  return value;
}

int64_t YamlMap::integer(const std::string& key, int64_t fallback, const limits::Range& range) {
  return in_range(key, integer(key, fallback), range);
}

double YamlMap::number(const std::string& key, double fallback, const limits::Range& range) {
  return in_range(key, number(key, fallback), range);
}

void YamlMap::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = canonical_key(it->first.as<std::string>());
    if (!read_.count(key))
      throw InputError(workloads::where(file_, it->first) + ": unknown key '" +
                       it->first.as<std::string>() + "' in " + what_);
  }
}

namespace {

// The mappings and lists above the one being read, and how many have been read: aliases may
// repeat a node many times over (`b: [*a, *a]`, `c: [*b, *b]`, ...).
struct Walk {
  std::vector<YAML::Node> within;
  size_t nodes = 0;
};

void reject_duplicate_map_keys(const YAML::Node& node, const std::string& file, const std::string& path, Walk& walk);

// How deep a file's mappings and lists may nest (every reader's recursion stays shallow), and how
// many a file may hold, aliases' repeats counted (the largest shipped file holds a few hundred).
constexpr size_t kMaxNesting = 64, kMaxNodes = 1'000'000;

// yaml-cpp keeps one of two equal keys and drops the other without a word: refuse them, in
// either spelling ('-' or '_'). And an alias inside the node it names (`a: &x [*x]`), which
// yaml-cpp makes a cycle that every reader would follow for ever, nesting past kMaxNesting and
// more than kMaxNodes mappings and lists.
void reject_duplicate_keys(const YAML::Node& node, const std::string& file, const std::string& path, Walk& walk) {
  if (!node.IsSequence() && !node.IsMap()) return;
  const std::string named = path.empty() ? "" : "key '" + path + "': ";
  for (const YAML::Node& outer : walk.within)
    if (outer.is(node)) throw InputError(workloads::where(file, node) + ": " + named + "an alias inside the node it names");
  if (walk.within.size() >= kMaxNesting)
    throw InputError(workloads::where(file, node) + ": " + named + "nested more than " + std::to_string(kMaxNesting) +
                     " levels deep");
  if (++walk.nodes > kMaxNodes)
    throw InputError(workloads::where(file, node) + ": " + named + "more than " + std::to_string(kMaxNodes) +
                     " mappings and lists, aliases' repeats counted");
  walk.within.push_back(node);
  if (node.IsSequence())
    for (size_t i = 0; i < node.size(); ++i)
      reject_duplicate_keys(node[i], file, path + "[" + std::to_string(i) + "]", walk);
  if (node.IsMap()) reject_duplicate_map_keys(node, file, path, walk);
  walk.within.pop_back();
}

void reject_duplicate_map_keys(const YAML::Node& node, const std::string& file, const std::string& path, Walk& walk) {
  std::map<std::string, int> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar())
      throw InputError(workloads::where(file, it->first) + ": a key must be a plain name, got a " +
                       (it->first.IsMap() ? "mapping" : "list") + (path.empty() ? "" : " in '" + path + "'"));
    const std::string key = it->first.Scalar();
    const std::string dotted = path.empty() ? key : path + "." + key;
    const auto [first, fresh] = seen.emplace(canonical_key(key), it->first.Mark().line + 1);
    if (!fresh)
      throw InputError(workloads::where(file, it->first) + ": key '" + dotted +
                       "': duplicate key (first given at line " + std::to_string(first->second) + ")");
    reject_duplicate_keys(it->second, file, dotted, walk);
  }
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  Walk walk;
  reject_duplicate_keys(root, file, "", walk);
  return root;
}

std::string read_text_file(const std::string& path) {
  const std::string problem = limits::input_file_problem(path);
  if (!problem.empty()) throw InputError(path + ": " + problem);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::workloads
