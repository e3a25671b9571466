// Strategy files (workloads/strategy.cpp).
#include "fuzz_input.h"
#include "workloads/errors.h"
#include "workloads/strategy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".yaml");
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>([&] {
    tessera::workloads::Strategy s;
    tessera::workloads::apply_strategy_file(s, path);
  });
  return 0;
}
