#include "sc_main/calibrate_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include <boost/program_options.hpp>

#include "calibration/kineto.h"
#include "platforms/platform_file.h"
#include "sc_main/cli.h"
#include "sc_main/input_error.h"
#include "sc_main/output_file.h"
#include "sc_main/platform_options.h"
#include "workloads/errors.h"

namespace po = boost::program_options;

namespace tessera::app {
namespace {

struct CalibrateSettings {
  std::vector<std::string> traces;
  std::string out, gpu;
};

po::options_description calibrate_options(CalibrateSettings& s) {
  po::options_description desc("tessera calibrate --kineto TRACE [--kineto TRACE ...] --out FILE [options]");
  desc.add_options()
      ("help,h", "this help")
      ("kineto", po::value(&s.traces)->composing(),
       "a PyTorch profiler (Kineto) trace, JSON or .json.gz; repeat for more ranks or runs")
      ("out", po::value(&s.out), "the calibration file to write (YAML)")
      ("gpu", po::value(&s.gpu),
       "the GPU type the table is for (a tessera GPU type), for traces whose device tessera does not know");
  return desc;
}

std::string known_gpus() {
  std::string names;
  for (const std::string& name : platforms::list_gpus()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// A trace may be large (it is read as a stream), but it is a regular file: not a folder, not a
// device that never ends.
void require_kineto_trace(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError("--kineto " + path + ": " + limits::input_file_problem(path));
}

void check_settings(const CalibrateSettings& s) {
  if (s.traces.empty()) throw InputError("--kineto: missing (at least one profiler trace)");
  if (s.out.empty()) throw InputError("--out: missing (the calibration file to write)");
  std::vector<OutputPath> inputs;
  for (const std::string& trace : s.traces) inputs.push_back({"--kineto", trace});
  check_output_paths({{"--out", s.out}}, inputs);
  for (const std::string& trace : s.traces) require_kineto_trace(trace);
  if (s.gpu.empty()) return;
  const std::vector<std::string> known = platforms::list_gpus();
  if (std::find(known.begin(), known.end(), s.gpu) == known.end())
    throw InputError("--gpu " + s.gpu + ": unknown GPU type (known: " + known_gpus() + ")");
}

std::string short_name(const std::string& name) {
  return name.size() <= 60 ? name : name.substr(0, 57) + "...";
}

// The kernels no cpu op could be found for, the most frequent first.
void print_unlinked(std::ostream& out, const calibration::TraceSummary& t) {
  constexpr size_t kShown = 5;
  std::vector<std::pair<int, std::string>> names;
  for (const auto& [name, count] : t.unlinked) names.emplace_back(count, name);
  std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < std::min(kShown, names.size()); ++i)
    out << "#   not linked to a cpu op: " << names[i].first << " x " << short_name(names[i].second) << "\n";
  if (names.size() > kShown)
    out << "#   not linked to a cpu op: ... and " << names.size() - kShown << " more kernel names\n";
}

void print_trace(std::ostream& out, const calibration::TraceSummary& t) {
  out << "# " << t.path << " (" << (t.device.empty() ? "no device name" : t.device) << " -> " << t.gpu
      << "): " << t.activities << " GPU activities, " << t.imported_kernels << " kernels imported as "
      << t.ops << " ops (kernels linked to their cpu op by External id " << t.linked_by_external_id
      << ", by time nesting " << t.linked_by_nesting << ")\n";
  if (!t.skipped.empty()) {
    out << "#   skipped:";
    const char* separator = " ";
    for (const auto& [reason, count] : t.skipped) {
      out << separator << count << " " << reason;
      separator = ", ";
    }
    out << "\n";
  }
  print_unlinked(out, t);
}

void print_table(std::ostream& out, const calibration::KernelTable& table) {
  char line[256];
  std::snprintf(line, sizeof line, "%-15s %-5s %-36s %10s %8s %8s\n", "kind", "dtype", "shape",
                "mean us", "samples", "TFLOP/s");
  out << line;
  for (const calibration::MeasuredKernel& k : table.kernels()) {
    char rate[32] = "-";
    if (calibration::is_gemm_kind(k.key.kind))
      std::snprintf(rate, sizeof rate, "%.1f", k.key.flops() / k.seconds / 1e12);
    std::snprintf(line, sizeof line, "%-15s %-5s %-36s %10.1f %8d %8s\n",
                  workloads::to_string(k.key.kind), workloads::to_string(k.key.dtype),
                  k.key.shape().c_str(), k.seconds * 1e6, k.samples, rate);
    out << line;
  }
}

calibration::KinetoImport import_traces(const CalibrateSettings& s) {
  try {
    return calibration::import_kineto_traces(s.traces, s.gpu);
  } catch (const workloads::InputError& e) {
    throw InputError(std::string("--kineto ") + e.what());
  }
}

}  // namespace

int command_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  CalibrateSettings s;
  const po::options_description desc = calibrate_options(s);
  po::variables_map vm;
  if (!parse_command_options(args, desc, out, vm)) return kOk;
  check_settings(s);
  const calibration::KinetoImport got = import_traces(s);
  out << "# tessera calibrate: " << s.traces.size() << " trace" << (s.traces.size() == 1 ? "" : "s")
      << ", GPU " << got.table.gpu() << "\n";
  for (const calibration::TraceSummary& t : got.traces) print_trace(out, t);
  if (got.table.empty())
    throw InputError("--kineto: no kernel could be imported (no cpu op with recorded shapes launched "
                     "any; profile with record_shapes=True)");
  out << "#\n";
  print_table(out, got.table);
  write_output_with(s.out, [&](const std::string& temporary) {
    try {
      got.table.save(temporary);
    } catch (const workloads::InputError& e) {
      throw OutputError(s.out + ": cannot write (" + e.what() + ")");
    }
  });
  out << "# wrote " << s.out << ": " << got.table.kernels().size() << " kernels\n";
  return kOk;
}

}  // namespace tessera::app
