// CSV readers: measured collective curves (--compare) and measured runs (validate --cases).
#include "calibration/measured_curve.h"
#include "calibration/validation_cases.h"
#include "fuzz_input.h"
#include "workloads/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".csv");
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>(
      [&] { tessera::calibration::read_measured_curve(path, 1.75); });
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>(
      [&] { tessera::calibration::read_validation_cases(path, {}); });
  return 0;
}
