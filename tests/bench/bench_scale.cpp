// make bench, scale group: training iterations at the sizes architects study, run by the
// tessera executable as a user runs it. Each row prints the wall time and peak RSS of the
// process (building the job, the platform and its routes included), the iteration time it
// predicts and the flows (in packet fidelity, fabric transactions) it simulated per second.
// Simulated fidelities are stopped at TESSERA_BENCH_MAX_WALL_S seconds (default 660: the
// largest target, 10 min, and a tenth) by tessera's own --max-wall-s; such a row prints how far
// it got instead of a time.
//
//   tessera_bench_scale [rows|scaling] [--flow-up-to GPUS]   (flow fidelity at every size unless told)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Outcome {
  int status = -1;
  double wall_s = 0;
  long rss_mib = 0;
  double iteration_s = 0;
  double flows = 0, transactions = 0;  // its report's `simulation` counts (0: none)
  std::string error;  // the first line of its stderr
};

double max_wall_s() {
  const char* v = std::getenv("TESSERA_BENCH_MAX_WALL_S");
  return v && std::atof(v) > 0 ? std::atof(v) : 660;
}

// The report's iteration time, read from its head: a child forked later would count this
// process's memory as its own peak (Linux carries the peak RSS across fork and exec), so the
// report of 65,536 ranks is not parsed whole here.
constexpr size_t kReportEnd = 4096;  // bytes read from either end of a report

// The number after JSON key `key` in `text`, looked for from `from` (0 where it is not there).
double number_after(const std::string& text, const std::string& key, size_t from = 0) {
  const std::string quoted = "\"" + key + "\":";
  const size_t at = text.find(quoted, from);
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + quoted.size());
}

double iteration_time(const char* report) {
  std::ifstream in(report);
  std::string head(kReportEnd, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  return number_after(head, "iteration_time_s");
}

// The report's `simulation` counts, read from its tail (the section comes last): flows started
// (flow fidelity) and fabric transactions (a chunk across a link; a flow across one in flow
// fidelity).
void simulation_counts(const char* report, Outcome& o) {
  std::ifstream in(report, std::ios::ate);
  const std::streamoff size = in.tellg();
  if (size <= 0) return;  // (no report: nothing to count)
  const std::streamoff end = std::streamoff(kReportEnd);
  const std::streamoff from = size > end ? size - end : 0;
  in.seekg(from);
  std::string tail(size_t(size - from), '\0');
  in.read(tail.data(), std::streamsize(tail.size()));
  const size_t section = tail.rfind("\"simulation\":");
  if (section == std::string::npos) return;
  o.flows = number_after(tail, "flows", section);
  o.transactions = number_after(tail, "fabric_transactions", section);
}

// `tessera run ARGS --report FILE -q` in a child process: its status, wall time, peak RSS and
// the iteration time of its report.
Outcome run(std::vector<std::string> args) {
  char report[] = "/tmp/tessera-bench-scale-XXXXXX", errors[] = "/tmp/tessera-bench-scale-err-XXXXXX";
  for (char* path : {report, errors}) {
    const int fd = mkstemp(path);
    if (fd >= 0) close(fd);
  }
  args.insert(args.begin(), {TESSERA_BIN, "run", "-q", "--report", report, "--max-wall-s",
                             std::to_string(int(max_wall_s()))});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);  // the child would write what this process has buffered again
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen(errors, "w", stderr)) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  Outcome o;
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && wait4(pid, &status, 0, &usage) == pid) {
    o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.rss_mib = usage.ru_maxrss / 1024;
  }
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.status == 0) {
    o.iteration_s = iteration_time(report);
    simulation_counts(report, o);
  }
  std::ifstream err(errors);
  std::getline(err, o.error);
  std::remove(report);
  std::remove(errors);
  return o;
}

std::string cell(const Outcome& o) {
  char text[160];
  if (o.status == 0)
    std::snprintf(text, sizeof text, "%8.2f s %6ld MiB", o.wall_s, o.rss_mib);
  else if (o.status == 5)
    std::snprintf(text, sizeof text, "  > %.0f s (stopped)", max_wall_s());
  else
    std::snprintf(text, sizeof text, "  failed (exit %d: %.60s)", o.status, o.error.c_str());
  return text;
}

// What a simulated run got through per second of its wall time: flows (flow fidelity) or fabric
// transactions (packet fidelity).
std::string rate(const Outcome& o) {
  if (o.status != 0 || o.wall_s <= 0) return "";
  const bool flows = o.flows > 0;
  const double per_s = (flows ? o.flows : o.transactions) / o.wall_s;
  char text[64];
  std::snprintf(text, sizeof text, "%.2f M %s/s", per_s / 1e6, flows ? "flows" : "transactions");
  return text;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Llama 3 405B's strategy file: one layer fewer on the first and last of 32 virtual stages.
std::string llama_405b_strategy() {
  const std::string path = "/tmp/tessera-bench-llama405b.yaml";
  std::ofstream out(path);
  out << "stage-layers: [3";
  for (int i = 0; i < 30; ++i) out << ", 4";
  out << ", 3]\n";
  return path;
}

struct Row {
  const char* what;
  std::vector<std::string> args;
  const char* fidelity;  // the fidelity the target is for
  const char* target;
};

void rows() {
  const std::string s405 = llama_405b_strategy();
  const std::vector<std::string> llama = {"--model", "llama3-405b", "--tp", "8", "--pp", "16", "--micro-batch", "1",
                                          "--vpp", "2", "--schedule", "interleaved", "--strategy", s405,
                                          "--zero", "2", "--sequence-parallel"};
  const std::vector<Row> table = {
      {"GPT-3 175B, 1,024 A100, tp 8, pp 16, dp 8, interleaved vpp 2, full recompute",
       {"--platform", "dgx-a100", "--nodes", "128", "--model", "gpt3-175b", "--tp", "8", "--pp", "16", "--dp", "8",
        "--micro-batch", "1", "--global-batch", "1536", "--schedule", "interleaved", "--vpp", "2", "--recompute",
        "full", "--dtype", "fp16"},
       "flow", "<= 10 s, <= 2 GiB"},
      {"GPT-3 175B, 1,536 A100, tp 8, pp 12, dp 16, full recompute",
       {"--platform", "dgx-a100", "--nodes", "192", "--model", "gpt3-175b", "--tp", "8", "--pp", "12", "--dp", "16",
        "--micro-batch", "1", "--global-batch", "1536", "--recompute", "full", "--dtype", "fp16"},
       "flow", "<= 15 s"},
      {"530B, 2,520 A100, tp 8, pp 35, dp 9, interleaved vpp 3",
       {"--platform", "dgx-a100", "--nodes", "315", "--model", "megatron-gpt", "--layers", "105", "--hidden", "20480",
        "--heads", "128", "--tp", "8", "--pp", "35", "--dp", "9", "--micro-batch", "1", "--global-batch", "2520",
        "--schedule", "interleaved", "--vpp", "3", "--recompute", "full", "--dtype", "fp16"},
       "flow", "<= 25 s"},
      {"Llama 3 405B, 16,384 H100, tp 8, pp 16, dp 128, interleaved vpp 2",
       with({"--platform", "dgx-h100", "--nodes", "2048", "--dp", "128", "--global-batch", "2048"}, llama), "flow",
       "<= 120 s, <= 8 GiB"},
      {"Llama 3 405B, 65,536 H100, tp 8, pp 16, dp 512, interleaved vpp 2",
       with({"--platform", "dgx-h100", "--nodes", "8192", "--dp", "512", "--global-batch", "8192"}, llama), "flow",
       "<= 10 min, <= 16 GiB"},
      {"GPT-3 13B, one dgx-h100 node, tp 8", {"--platform", "dgx-h100", "--model", "gpt3-13b", "--tp", "8",
                                               "--global-batch", "8", "--micro-batch", "1"},
       "packet", "<= 60 s"},
  };
  std::printf("tessera benchmark (training iterations at scale, one core; simulated runs stopped at %.0f s)\n",
              max_wall_s());
  std::printf("  %-72s %-8s %-22s %-22s %-22s %-22s %s\n", "run", "measured", "analytic", "flow", "packet",
              "simulated per second", "target");
  for (const Row& row : table) {
    const Outcome analytic = run(with(row.args, {"--fidelity", "analytic"}));
    const Outcome simulated = run(with(row.args, {"--fidelity", row.fidelity}));
    const bool flow = std::string(row.fidelity) == "flow";
    std::printf("  %-72s %-8s %-22s %-22s %-22s %-22s %s", row.what, row.fidelity, cell(analytic).c_str(),
                flow ? cell(simulated).c_str() : "", flow ? "" : cell(simulated).c_str(), rate(simulated).c_str(),
                row.target);
    if (analytic.status == 0 && simulated.status == 0)
      std::printf(" (iteration %.3f s analytic, %.3f s simulated)", analytic.iteration_s, simulated.iteration_s);
    std::printf("\n");
    std::fflush(stdout);
  }
}

// One model family (Llama 3 70B, tp 8, pp 8, 16 micro-batches per replica) from 64 to 65,536
// GPUs: the cost of a run against its size, analytic at every size, flow up to `flow_up_to`.
void scaling(int flow_up_to) {
  std::printf("tessera scaling (Llama 3 70B on dgx-h100, tp 8, pp 8, dp = GPUs / 64, 16 micro-batches per replica)\n");
  std::printf("  %8s %-22s %-14s %-22s %-22s %s\n", "GPUs", "analytic", "per GPU", "flow", "per GPU", "per second");
  for (int gpus : {64, 256, 1024, 4096, 16384, 32768, 65536}) {  // (32,768: the first of three tiers)
    const int dp = gpus / 64;
    const std::vector<std::string> args = {"--platform", "dgx-h100", "--nodes", std::to_string(gpus / 8), "--model",
                                           "llama3-70b", "--tp", "8", "--pp", "8", "--dp", std::to_string(dp),
                                           "--micro-batch", "1", "--global-batch", std::to_string(16 * dp)};
    const Outcome a = run(with(args, {"--fidelity", "analytic"}));
    char per[64];
    std::snprintf(per, sizeof per, "%.1f us %.1f KiB", a.wall_s / gpus * 1e6, double(a.rss_mib) * 1024 / gpus);
    std::printf("  %8d %-22s %-14s", gpus, cell(a).c_str(), per);
    if (gpus <= flow_up_to) {
      const Outcome f = run(with(args, {"--fidelity", "flow"}));
      std::snprintf(per, sizeof per, "%.1f us %.1f KiB", f.wall_s / gpus * 1e6, double(f.rss_mib) * 1024 / gpus);
      std::printf(" %-22s %-22s %s", cell(f).c_str(), f.status == 0 ? per : "", rate(f).c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string only;
  int flow_up_to = 65536;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--flow-up-to" && i + 1 < argc) flow_up_to = std::atoi(argv[++i]);
    else only = a;
  }
  if (only.empty() || only == "rows") rows();
  if (only.empty() || only == "scaling") scaling(flow_up_to);
  return 0;
}
