// `tessera search`: the strategies of a model on a platform, enumerated, pruned (invalid or out
// of memory, each reason counted), ranked by a fast fidelity and the best simulated in flow
// fidelity through the sweep engine (docs/search.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::app {

int command_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The fastest fidelity this build has, for pruning: "analytic" where it exists, else "flow".
std::string fastest_fidelity();

}  // namespace tessera::app
