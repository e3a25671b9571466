// PyTorch profiler (Kineto) traces (`tessera calibrate --kineto`, calibration/kineto.cpp): both
// layouts, with a GPU named for traces whose device tessera does not know.
#include "calibration/kineto.h"
#include "fuzz_input.h"
#include "workloads/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".json");
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>(
      [&] { tessera::calibration::import_kineto_traces({path}, "A100-SXM4-80GB"); });
  return 0;
}
