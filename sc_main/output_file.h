// Every file tessera writes (report, trace, SVG plot, Markdown page, calibration table) goes
// through here. Paths are checked before anything is simulated; a file is written beside its
// target and renamed over it, so a failed or interrupted run never leaves a partial result,
// and a failed write, flush or close is an error with its reason, never a silent success.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::app {

// An output that could not be written: "PATH: cannot write (No space left on device)".
// The command line exits with status 1.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OutputPath {
  std::string option;  // "--report"
  std::string path;    // "" when the option is not given
};

// Before any work: each given path can be written (its folder exists and is writable, it is
// not a folder), no two outputs name the same file and no output names one of the `inputs`
// the command reads (files that exist; a platform or model given by name is not a file).
// Throws InputError naming the option.
void check_output_paths(const std::vector<OutputPath>& outputs, const std::vector<OutputPath>& inputs = {});

// The whole text of the file at `path` (empty where it cannot be read).
std::string read_all(const std::string& path);

// Writes `text` to `path` as a whole or not at all.
void write_output(const std::string& path, const std::string& text);

// The same for text made piece by piece: `produce` hands each piece, in order, to the function
// it is given (a large report need not be held whole).
void write_output_pieces(const std::string& path,
                         const std::function<void(const std::function<void(const std::string&)>&)>& produce);

// The same for a writer that takes a path (a library's save function): it writes a temporary
// file, which then replaces `path`.
void write_output_with(const std::string& path, const std::function<void(const std::string&)>& write_to);

}  // namespace tessera::app
