// Measured kernel times from PyTorch profiler (Kineto) traces: every GPU kernel is linked to the
// CPU op that launched it, classified into a workloads::KernelKind with its shape (from the op's
// recorded `Input Dims`), and the ops' times are averaged per kind, dtype and shape into a
// KernelTable (docs/calibration.md).
//
//   KinetoImport got = import_kineto_traces({"rank0.json.gz", "rank1.json.gz"});
//   got.table.save("calib.yaml");
//
// A kernel links to its launch (`cuda_runtime`/`cuda_driver` event with the same
// `args.correlation`); the launch to its `cpu_op` by `args["External id"]` (newer traces) or, where
// that names no op enclosing the launch (older traces), by time nesting: the innermost cpu_op on
// the launch's pid/tid whose [ts, ts+dur] contains it. All kernels one op launched make one sample.
//
// Bad input (a file that cannot be read, not JSON, not a profiler trace, a GPU tessera does not
// know) throws workloads::InputError "FILE: ...".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibration/kernel_table.h"

namespace tessera::calibration {

// What one trace held and what became of its GPU activities.
struct TraceSummary {
  std::string path;
  std::string device;            // deviceProperties[0].name, as CUDA names it
  std::string gpu;               // the tessera GPU type the table is for
  int activities = 0;            // kernels, memcpys and memsets on the GPU
  int imported_kernels = 0;      // kernels that count in a sample
  int ops = 0;                   // the samples: cpu ops with their kernels summed
  int linked_by_external_id = 0; // launches linked to their op by External id
  int linked_by_nesting = 0;     // ... by time nesting
  std::map<std::string, int> skipped;   // reason -> kernels ("NCCL", "memcpy", ...)
  std::map<std::string, int> unlinked;  // kernel name -> kernels no cpu op could be found for
};

struct KinetoImport {
  KernelTable table;                 // sorted by key; gpu and source set
  std::vector<TraceSummary> traces;  // in the order of the paths
};

// Imports traces (JSON, or gzip-compressed JSON: `.json.gz`). `gpu`, when not empty, names the
// GPU type the table is for: it must be one tessera knows, and it is used for traces whose device
// tessera does not know; a trace recorded on a different known GPU is an error.
KinetoImport import_kineto_traces(const std::vector<std::string>& paths, const std::string& gpu = "");
KernelTable import_kineto(const std::vector<std::string>& paths);

// The tessera GPU type of a CUDA device name ("NVIDIA A100-SXM4-80GB" -> "A100-SXM4-80GB",
// "NVIDIA H100 80GB HBM3" -> "H100-SXM5-80GB"); empty when tessera has no such GPU type.
std::string gpu_type_of_device(const std::string& device_name);

// A file's text, gunzipped when it is gzip-compressed; throws workloads::InputError.
std::string read_possibly_gzipped(const std::string& path);

}  // namespace tessera::calibration
