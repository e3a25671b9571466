// `tessera calibrate`: measured kernel times from PyTorch profiler (Kineto) traces into a
// calibration file (docs/calibration.md) that `--calibration FILE` gives the compute model.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

// tessera calibrate --kineto TRACE [--kineto TRACE ...] --out FILE [--gpu NAME]
// Prints what each trace held and the table of imported kernels, then writes FILE. Bad input
// throws InputError naming the option and its value (exit status 2).
int command_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
