// `tessera plan`: a pipeline plan for a model on a platform whose GPUs are not uniformly
// connected: layers partitioned unevenly from per-layer times measured by simulating the uniform
// plan, stages placed on GPUs by the platform's routes, the micro-batch order chosen by
// simulation; written as a strategy YAML for `tessera run --strategy` (docs/planning.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

int command_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera::app
