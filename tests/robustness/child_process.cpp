#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace robustness {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

[[noreturn]] void exec_child(const std::string& program, const std::vector<std::string>& args,
                             const std::string& directory, const Limits& limits, const std::string& out,
                             const std::string& err) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer maps terabytes of shadow: the limit is on resident memory instead.
  const std::string asan = "detect_leaks=0:hard_rss_limit_mb=" + std::to_string(limits.address_space_bytes >> 20);
  setenv("ASAN_OPTIONS", asan.c_str(), 1);
#else
  const rlimit memory{limits.address_space_bytes, limits.address_space_bytes};
  setrlimit(RLIMIT_AS, &memory);
#endif
  if (chdir(directory.c_str()) != 0) _exit(127);
  dup2(open("/dev/null", O_RDONLY), 0);
  dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
  dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  _exit(127);
}

}  // namespace

Outcome run_child(const std::string& program, const std::vector<std::string>& args,
                  const std::string& directory, const Limits& limits) {
  const std::string out = directory + "/.stdout", err = directory + "/.stderr";
  const pid_t pid = fork();
  if (pid == 0) exec_child(program, args, directory, limits, out, err);
  Outcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.wall_s);
  int raw = 0;
  rusage usage{};
  while (wait4(pid, &raw, WNOHANG, &usage) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      outcome.timed_out = true;
      kill(pid, SIGKILL);
      wait4(pid, &raw, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  outcome.max_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(raw)) outcome.status = WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) outcome.signal = WTERMSIG(raw);
  outcome.out = slurp(out);
  outcome.err = slurp(err);
  return outcome;
}

}  // namespace robustness
