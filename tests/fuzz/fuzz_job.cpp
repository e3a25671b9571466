// Job files (sc_main/job_file.cpp), then the job's own validation.
#include <stdexcept>

#include "fuzz_input.h"
#include "sc_main/input_error.h"
#include "sc_main/job_file.h"
#include "workloads/errors.h"
#include "workloads/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".yaml");
  fuzzing::expect_input_errors_only<tessera::app::InputError, tessera::workloads::InputError, std::invalid_argument>(
      [&] { tessera::workloads::validate(tessera::app::load_job_file(path)); });
  return 0;
}
