// `tessera compute`: the compute model's time for GEMM shapes on one GPU type (the tile it
// picks, its waves, whether compute or HBM bounds it), and, with --measured, every measured
// GEMM of a CSV for that GPU against the model, with STREAM and flash attention against the
// compute-model file's values (docs/compute-model.md).
//
//   tessera compute --gpu A100-SXM4-80GB --gemm 4096,4096,4096 --gemm 16,2048,2048,128
//   tessera compute --gpu H100-SXM5-80GB --measured tests/validation/data/gemm_and_memory.csv
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

// Bad input (an unknown GPU or one without a compute-model file, a malformed, non-positive or
// too large shape, an unknown dtype, an unreadable or malformed CSV) throws app::InputError,
// one line naming the option and its value.
int command_compute(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
