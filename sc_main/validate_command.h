// `tessera validate --cases FILE.csv`: every measured run of the file simulated with the same
// `tessera run` a user would type, several at once (-j), each in its own process (SystemC
// elaborates once per process); prints measured, predicted and error per case and the MAPE,
// writes a JSON report and an SVG of predicted against measured, and exits 1 when the MAPE
// exceeds --max-mape (docs/validation.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

int command_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
