#include "workloads/yaml_reader.h"

#include <fstream>
#include <sstream>

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

void YamlMap::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = canonical_key(it->first.as<std::string>());
    if (!read_.count(key))
      throw InputError(workloads::where(file_, it->first) + ": unknown key '" +
                       it->first.as<std::string>() + "' in " + what_);
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::workloads
