#include "sc_main/reference_run.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>

namespace tessera::app {

platforms::PlatformConfig without_rtl(platforms::PlatformConfig p) {
  p.node.nvswitch.arbiter = "c++";
  p.network.switch_arbiter.arbiter = "c++";
  p.node.nics.rate_limiter = "none";
  return p;
}

ReferenceRun run_without_rtl(const platforms::PlatformConfig& platform, const workloads::Job& job,
                             SimulationOptions options) {
  ReferenceRun r;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.error = "no pipe to a child process";
    return r;
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    r.error = "no child process";
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // ends with the run (--max-wall-s stops the parent)
    if (::getppid() != parent) ::_exit(1);
    char text[128];
    int n = 0;
    try {
      options.progress = false;
      options.vcd.clear();
      options.inspect = nullptr;
      const SimulationResult result = simulate(without_rtl(platform), job, options);
      n = std::snprintf(text, sizeof text, "%.17g %.17g\n", result.wall_s, result.iteration_time_s);
    } catch (const std::exception&) {
      n = 0;
    }
    if (n > 0 && ::write(fds[1], text, size_t(n)) != n) n = 0;
    ::close(fds[1]);
    ::_exit(n > 0 ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[256];
  ssize_t got;
  while ((got = ::read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, size_t(got));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(text.c_str(), "%lf %lf", &r.wall_s, &r.iteration_time_s) != 2) {
    r.error = "the run without RTL did not finish";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace tessera::app
