// What a run's row records about its process so that `gcprof verify` can
// re-run it: the environment variables that change training behaviour
// (never credentials), as a JSON object.
#pragma once

#include <string>

namespace gcprof {

std::string jsonString(const std::string& s);  // a JSON string literal
std::string relevantEnvironmentJson(char** environ);

// Variables that load code into a process or steer the injector (LD_PRELOAD,
// CUDA_INJECTION64_PATH, GCPROF_*, PYTHONPATH, ...): never recorded, never
// restored by `gcprof verify`, whatever a trace holds (docs/plan.md).
bool loaderOrInjector(const std::string& name);
// Why `gcprof verify` does not restore a variable a run's row holds; "" when
// it restores it (the variables `record` stores, less loaderOrInjector's).
std::string whyNotRestored(const std::string& name);

}  // namespace gcprof
