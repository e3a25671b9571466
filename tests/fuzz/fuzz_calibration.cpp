// Calibration files (measured kernel tables, calibration/kernel_table.cpp).
#include "calibration/kernel_table.h"
#include "fuzz_input.h"
#include "workloads/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".yaml");
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>(
      [&] { tessera::calibration::KernelTable::load(path); });
  return 0;
}
