// Platform and GPU files (platforms/platform_file.cpp).
#include "fuzz_input.h"
#include "platforms/platform_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".yaml");
  fuzzing::expect_input_errors_only<tessera::platforms::PlatformFileError>(
      [&] { tessera::platforms::load_platform(path, {}); });
  return 0;
}
