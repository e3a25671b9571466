// SystemC elaborates and starts once per process: every simulating scenario runs in a forked
// child, which sends its results back as a JSON text. The parent makes the assertions.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::testing {

// Runs `scenario` in a child process and returns the JSON it produced. A child that throws
// returns {"error": what}; a child that crashes fails the call with std::runtime_error.
inline nlohmann::json run_in_child(const std::function<nlohmann::json()>& scenario) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    try {
      text = scenario().dump();
    } catch (const std::exception& e) {
      text = nlohmann::json{{"error", e.what()}}.dump();
    }
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buffer[65536];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("scenario child process died (status " + std::to_string(status) + ")");
  return nlohmann::json::parse(text);
}

}  // namespace tessera::testing
