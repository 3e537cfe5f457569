// What a run's row records about its process so that `gcprof verify` can
// re-run it: the environment variables that change training behaviour
// (never credentials), as a JSON object.
#pragma once

#include <string>

namespace gcprof {

std::string jsonString(const std::string& s);  // a JSON string literal
std::string relevantEnvironmentJson(char** environ);

}  // namespace gcprof
