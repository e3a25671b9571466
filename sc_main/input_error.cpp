#include "sc_main/input_error.h"

namespace tessera::app {

InputError input_error(const std::string& file, int line, const std::string& key,
                       const std::string& problem) {
  std::string text = file;
  if (line > 0) text += ":" + std::to_string(line);
  text += ": ";
  if (!key.empty()) text += "key '" + key + "': ";
  return InputError(text + problem);
}

void check_option(const std::string& option, double value, const limits::Range& range) {
  const std::string problem = limits::problem(value, range);
  if (!problem.empty()) throw InputError(option + ": " + problem);
}

void require_input_file(const std::string& path, const std::string& what) {
  const std::string problem = limits::input_file_problem(path);
  if (!problem.empty()) throw InputError(path + ": " + what + " " + problem);
}

}  // namespace tessera::app
