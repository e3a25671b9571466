// Running a command's function as the command line does: its status and output, or the one-line
// InputError it throws on bad input.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "sc_main/input_error.h"

namespace tessera::command_testing {

struct Outcome {
  int status = -1;
  std::string out, error;  // error: the InputError's message
};

template <typename Command>
Outcome run_command(Command command, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Outcome r;
  try {
    r.status = command(args, out, err);
  } catch (const app::InputError& e) {
    r.error = e.what();
  }
  r.out = out.str();
  return r;
}

}  // namespace tessera::command_testing
