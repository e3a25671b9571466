// Small Kineto traces written by the tests: cpu ops, launches and kernels with known times and
// shapes, in the newer layout (the launch names its op by External id) or the older one (time
// nesting only).
#pragma once

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/temp_folder.h"

namespace tessera::calibration::testing {

using json = nlohmann::json;

inline std::string temp_dir() {
  static const test_support::TempFolder folder("/tmp/tessera-calibration-");
  return folder.path();
}

inline std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

inline std::string write_gzip(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TraceBuilder {
 public:
  explicit TraceBuilder(std::string device = "NVIDIA A100-SXM4-80GB", bool external_ids = true)
      : device_(std::move(device)), external_ids_(external_ids) {}

  // A cpu op on the main thread; returns its External id. `dims` null: no shapes recorded.
  int op(const std::string& name, double ts, double dur, json dims = nullptr, json types = nullptr) {
    json args = {{"External id", ++next_op_id_}};
    if (!dims.is_null()) args["Input Dims"] = dims;
    if (!types.is_null()) args["Input type"] = types;
    events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", name}, {"pid", 100}, {"tid", 100},
                       {"ts", ts}, {"dur", dur}, {"args", args}});
    return next_op_id_;
  }

  // A launch at `ts` (2 us long) of `op` and its kernel of `us` microseconds; returns the
  // correlation. The newer layout puts the launch on another thread, so that only the External
  // id can link it; the older one on the ops' thread, without External id.
  int64_t kernel(int op_id, double ts, const std::string& kernel_name, double us,
                 const std::string& category = "kernel") {
    const int64_t correlation = ++next_correlation_;
    json launch_args = {{"correlation", correlation}, {"cbid", 211}};
    if (external_ids_) launch_args["External id"] = op_id;
    events_.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"},
                       {"pid", 100}, {"tid", external_ids_ ? 101 : 100}, {"ts", ts}, {"dur", 2},
                       {"args", launch_args}});
    gpu(kernel_name, ts + 5, us, correlation, category);
    return correlation;
  }

  // A GPU activity, linked or not.
  void gpu(const std::string& name, double ts, double us, int64_t correlation,
           const std::string& category = "kernel") {
    events_.push_back({{"ph", "X"}, {"cat", category}, {"name", name}, {"pid", 0}, {"tid", 7},
                       {"ts", ts}, {"dur", us},
                       {"args", {{"correlation", correlation}, {"device", 0}, {"stream", 7}}}});
  }

  std::string text() const {
    json doc = {{"schemaVersion", 1},
                {"deviceProperties", json::array({{{"id", 0}, {"name", device_}}})},
                {"traceEvents", events_}};
    return doc.dump();
  }

 private:
  std::string device_;
  bool external_ids_;
  int next_op_id_ = 0;
  int64_t next_correlation_ = 1000;
  json events_ = json::array();
};

}  // namespace tessera::calibration::testing
