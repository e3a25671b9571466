// Running the tessera executable as a user does, for the command-line tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_folder.h"

namespace cli_testing {

struct Result {
  int status = -1;
  std::string out, err;
};

inline std::string temp_dir() {
  static const test_support::TempFolder folder("/tmp/tessera-cli-");
  return folder.path();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// `environment`: NAME=value settings for this run only (env(1)'s).
inline Result tessera(const std::string& args, const std::string& environment = "") {
  static int counter = 0;
  const std::string out = temp_dir() + "/out" + std::to_string(counter);
  const std::string err = temp_dir() + "/err" + std::to_string(counter++);
  const std::string command = (environment.empty() ? std::string() : "env " + environment + " ") +
                              std::string(TESSERA_BIN) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

inline int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace cli_testing
