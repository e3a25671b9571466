// Config files (`tessera run --config`): the whole command line, stopped before any simulation by
// a platform that does not exist (options on the command line win over the file's).
#include <sstream>

#include "fuzz_input.h"
#include "sc_main/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzzing::as_file(data, size, ".cfg");
  const char* argv[] = {"tessera", "run", "--config", path.c_str(), "--platform", "/nonexistent/p.yaml", "-q"};
  std::ostringstream out, err;
  const int status = tessera::app::run_cli(7, argv, out, err);
  if (status != tessera::app::kBadInput) {
    std::fprintf(stderr, "config run ended with status %d: %s\n", status, err.str().c_str());
    std::abort();
  }
  return 0;
}
