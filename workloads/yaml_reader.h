// Strict YAML reading for model and strategy files: every key must be known, and every error
// names the file, the (1-based) line and the key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "workloads/errors.h"
#include "workloads/limits.h"

namespace tessera::workloads {

// "file:line" of a node (yaml-cpp's Mark is 0-based).
std::string where(const std::string& file, const YAML::Node& node);

// A YAML mapping read key by key. Keys may be written with '-' or '_'. finish() rejects keys
// nobody asked for, so a typo ("hiden: 4096") is an error, not a silently ignored line.
class YamlMap {
 public:
  YamlMap(const YAML::Node& node, std::string file, std::string what);

  bool has(const std::string& key) const;
  // Marks the key as read; nullopt when absent (a key with an empty value counts as absent).
  std::optional<YAML::Node> get(const std::string& key);
  std::string where(const std::string& key) const;  // "file:line" of the key

  std::string string(const std::string& key, const std::string& fallback);
  int64_t integer(const std::string& key, int64_t fallback);
  double number(const std::string& key, double fallback);
  bool boolean(const std::string& key, bool fallback);
  // The same, failing with the range's problem when the value given is outside `range`.
  int64_t integer(const std::string& key, int64_t fallback, const limits::Range& range);
  double number(const std::string& key, double fallback, const limits::Range& range);
  // Throws InputError "file:line: key 'k': message".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  void finish() const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string what_;
  std::set<std::string> read_;
  std::optional<YAML::Node> get_const(const std::string& key) const;
  template <typename T>
  T in_range(const std::string& key, T value, const limits::Range& range) const;
};

// Parses YAML text; syntax errors become InputError with file and line.
YAML::Node parse_yaml(const std::string& text, const std::string& file);
// Reads a file into a string; a missing file is an InputError.
std::string read_text_file(const std::string& path);
// Canonical key spelling: '_' -> '-'.
std::string canonical_key(std::string key);

}  // namespace tessera::workloads
