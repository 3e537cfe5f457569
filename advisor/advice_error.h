// Bad input to the advisor (no such units, a trace without backward ranges,
// a malformed budget or plan): the CLI prints it and exits 2.
#pragma once

#include <stdexcept>

namespace gcprof::advisor {

struct AdviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gcprof::advisor
