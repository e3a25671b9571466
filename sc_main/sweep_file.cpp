#include "sc_main/sweep_file.h"

#include <algorithm>
#include <map>

#include "platforms/platform_file.h"
#include "sc_main/cli.h"
#include "sc_main/input_error.h"
#include "workloads/model.h"
#include "workloads/yaml_reader.h"

namespace tessera::app {
namespace {

// One key and value of the file, where it was written.
struct Setting {
  std::string key, value;
  int line = 0;
};
using Settings = std::vector<Setting>;

// Options the sweep sets itself, or that make no sense per run.
const char* const kReserved[] = {"report", "report-detail", "trace", "trace-bucket-us", "config", "quiet", "help"};

// Option names in either spelling ('-' or '_'); a platform key after "set." as written.
std::string option_key(const std::string& written) {
  if (written.rfind("set.", 0) == 0) return written;
  return workloads::canonical_key(written);
}

int line_of(const YAML::Node& node) { return node.Mark().is_null() ? 0 : node.Mark().line + 1; }

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  SweepPlan read();

 private:
  [[noreturn]] void fail(int line, const std::string& key, const std::string& problem) const {
    throw input_error(path_, line, key, problem);
  }
  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty())
      fail(line_of(node), key, "expects a value (a number, a word or true/false)");
    return node.Scalar();
  }
  void check(const Setting& s);
  Settings settings(const YAML::Node& map, const std::string& what, bool named);
  std::vector<Settings> grid(const YAML::Node& map);
  SweepRun expand(const Settings& base, const Settings& run, const Settings& point, SweepPlan& plan) const;

  std::string path_;
  std::string platform_ = "dgx-h100";  // the base platform, for checking set.KEY values
  std::vector<std::string> base_sets_;  // the base's platform settings, checked with each
  bool reading_base_ = false;
};

// Checks one key and value as `tessera run` would read them.
void Reader::check(const Setting& s) {
  try {
    if (s.key == "set" || s.key.rfind("set.", 0) == 0) {
      const std::string setting = s.key == "set" ? s.value : s.key.substr(4) + "=" + s.value;
      if (setting.find('=') == std::string::npos) fail(s.line, s.key, "expects KEY=VALUE, got '" + s.value + "'");
      std::vector<std::string> sets = base_sets_;
      sets.push_back(setting);
      platforms::load_platform(platform_, sets);
      if (reading_base_) base_sets_.push_back(setting);
      return;
    }
    if (std::find(std::begin(kReserved), std::end(kReserved), s.key) != std::end(kReserved))
      fail(s.line, s.key, "the sweep sets it (each run's report is a row of the sweep's outputs)");
    run_option_args(s.key, s.value);
    // The base's node count and size shape the platform its set.KEY values are checked on.
    if (reading_base_ && (s.key == "nodes" || s.key == "gpus"))
      base_sets_.push_back((s.key == "nodes" ? "nodes=" : "node.gpus=") + s.value);
    if (s.key == "model") workloads::load_model(s.value);
    if (s.key == "platform") platforms::load_platform(s.value);
  } catch (const InputError& e) {
    if (std::string(e.what()).rfind(path_, 0) == 0) throw;
    fail(s.line, s.key, e.what());
  } catch (const std::exception& e) {
    fail(s.line, s.key, e.what());
  }
}

// A mapping of options: `set` may hold a list of KEY=VALUE; `name` labels a listed run.
Settings Reader::settings(const YAML::Node& map, const std::string& what, bool named) {
  if (!map.IsMap()) fail(line_of(map), what, "expects a mapping of run options");
  Settings out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = option_key(scalar(it->first, what));
    const int line = line_of(it->first);
    for (const Setting& s : out)
      if (s.key == key && key != "set") fail(line, key, "given twice");
    if (key == "name" && named) {
      out.push_back({key, scalar(it->second, key), line});
      continue;
    }
    if (key == "set" && it->second.IsSequence()) {
      for (const YAML::Node& item : it->second) out.push_back({key, scalar(item, key), line_of(item)});
    } else {
      out.push_back({key, scalar(it->second, key), line});
    }
    check(out.back());
  }
  return out;
}

// The grid's points: the cartesian product of its lists, the first key varying slowest.
std::vector<Settings> Reader::grid(const YAML::Node& map) {
  if (!map.IsMap()) fail(line_of(map), "grid", "expects a mapping of option: [values]");
  std::vector<Settings> points{{}};
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = option_key(scalar(it->first, "grid"));
    if (key == "name" || key == "set") fail(line_of(it->first), key, "cannot vary in a grid (vary set.KEY)");
    Settings values;
    const YAML::Node v = it->second;
    if (v.IsSequence()) {
      if (v.size() == 0) fail(line_of(it->first), key, "an empty list of values");
      for (const YAML::Node& item : v) values.push_back({key, scalar(item, key), line_of(item)});
    } else {
      values.push_back({key, scalar(v, key), line_of(it->first)});
    }
    for (const Setting& s : values) check(s);
    for (const Setting& s : points.front())
      if (s.key == key) fail(line_of(it->first), key, "given twice");
    if (points.size() * values.size() > kMaxSweepRuns)
      fail(line_of(it->first), key, "the grid has more than " + std::to_string(kMaxSweepRuns) + " points");
    std::vector<Settings> next;
    for (const Settings& p : points)
      for (const Setting& s : values) {
        next.push_back(p);
        next.back().push_back(s);
      }
    points = std::move(next);
  }
  return points;
}

SweepRun Reader::expand(const Settings& base, const Settings& run, const Settings& point, SweepPlan& plan) const {
  for (const Setting& r : run)
    for (const Setting& p : point)
      if (r.key == p.key && r.key != "set")
        fail(r.line, r.key, "also varied by the grid (line " + std::to_string(p.line) + ")");
  std::vector<const Setting*> all;
  for (const Settings* part : {&base, &run, &point})
    for (const Setting& s : *part) {
      auto same = std::find_if(all.begin(), all.end(), [&](const Setting* a) { return a->key == s.key && s.key != "set"; });
      if (same != all.end()) *same = &s;  // a run or the grid overrides the base
      else all.push_back(&s);
    }
  SweepRun out;
  for (const Setting* s : all) {
    if (s->key == "name") {
      out.name = s->value;
      continue;
    }
    out.parameters.emplace_back(s->key, s->value);
    if (std::find(plan.columns.begin(), plan.columns.end(), s->key) == plan.columns.end())
      plan.columns.push_back(s->key);
    if (s->key == "set") out.args.insert(out.args.end(), {"--set", s->value});
    else if (s->key.rfind("set.", 0) == 0) out.args.insert(out.args.end(), {"--set", s->key.substr(4) + "=" + s->value});
    else for (const std::string& a : run_option_args(s->key, s->value)) out.args.push_back(a);
  }
  return out;
}

SweepPlan Reader::read() {
  require_input_file(path_, "sweep file");
  const YAML::Node root = workloads::parse_yaml(workloads::read_text_file(path_), path_);
  if (!root.IsMap()) fail(line_of(root), "", "a sweep file is a mapping with base, grid and runs");
  YAML::Node base_node, grid_node, runs_node;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = workloads::canonical_key(scalar(it->first, "sweep"));
    if (key == "base") base_node = it->second;
    else if (key == "grid") grid_node = it->second;
    else if (key == "runs") runs_node = it->second;
    else fail(line_of(it->first), key, "unknown key (base, grid or runs)");
  }
  if (base_node && base_node.IsMap())
    for (auto it = base_node.begin(); it != base_node.end(); ++it)
      if (it->first.IsScalar() && workloads::canonical_key(it->first.Scalar()) == "platform" && it->second.IsScalar())
        platform_ = it->second.Scalar();
  reading_base_ = true;
  const Settings base = base_node && !base_node.IsNull() ? settings(base_node, "base", false) : Settings{};
  reading_base_ = false;
  const std::vector<Settings> points = grid_node && !grid_node.IsNull() ? grid(grid_node) : std::vector<Settings>{{}};
  std::vector<Settings> listed;
  if (runs_node && !runs_node.IsNull()) {
    if (!runs_node.IsSequence() || runs_node.size() == 0)
      fail(line_of(runs_node), "runs", "expects a list of runs (mappings of run options)");
    for (const YAML::Node& run : runs_node) listed.push_back(settings(run, "runs", true));
  }
  if (listed.empty() && (!grid_node || grid_node.IsNull()))
    fail(line_of(root), "", "a sweep needs a grid or runs");
  if (listed.empty()) listed.emplace_back();
  if (listed.size() * points.size() > kMaxSweepRuns)
    fail(line_of(runs_node), "runs", "runs x grid points is more than " + std::to_string(kMaxSweepRuns));
  SweepPlan plan;
  for (const Settings& run : listed)
    for (const Settings& point : points) plan.runs.push_back(expand(base, run, point, plan));
  return plan;
}

}  // namespace

SweepPlan read_sweep_file(const std::string& path) { return Reader(path).read(); }

}  // namespace tessera::app
