// Model files (workloads/model.cpp), read from text.
#include "fuzz_input.h"
#include "workloads/errors.h"
#include "workloads/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzzing::expect_input_errors_only<tessera::workloads::InputError>(
      [&] { tessera::workloads::parse_model(text, "fuzz.yaml"); });
  return 0;
}
