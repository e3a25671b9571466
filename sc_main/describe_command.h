#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::app {

// `tessera describe`: prints the platform's hierarchy, link counts, bisection bandwidth and a
// route. Throws InputError for bad options or a bad platform.
int command_describe(const std::vector<std::string>& args, std::ostream& out);

}  // namespace tessera::app
