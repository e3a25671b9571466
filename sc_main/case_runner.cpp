#include "sc_main/case_runner.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <stdexcept>

namespace tessera::app {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

pid_t start_child(const ChildRun& run) {
  std::vector<std::string> argv = {"tessera"};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start a child process (fork failed)");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    const int fd = open(run.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    execv("/proc/self/exe", cargv.data());
    _exit(127);
  }
  return pid;
}

int child_exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void run_children(std::vector<ChildRun>& runs, int jobs, const std::function<void(size_t)>& finished) {
  std::map<pid_t, std::pair<size_t, Clock::time_point>> running;
  size_t next = 0;
  while (next < runs.size() || !running.empty()) {
    while (next < runs.size() && static_cast<int>(running.size()) < std::max(1, jobs)) {
      running[start_child(runs[next])] = {next, Clock::now()};
      ++next;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("lost track of a child process");
    auto it = running.find(pid);
    if (it == running.end()) continue;
    ChildRun& run = runs[it->second.first];
    run.status = child_exit_status(status);
    run.wall_s = std::chrono::duration<double>(Clock::now() - it->second.second).count();
    const size_t index = it->second.first;
    running.erase(it);
    finished(index);
  }
}

std::string last_line(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace tessera::app
