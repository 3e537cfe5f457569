// A run's step time: what `advise` prices a plan's slowdown against and what
// `verify` measures, one definition for both.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

// The median duration of a run's steps, leaving out the first (warm-up) when
// there are at least three.
Ns medianStepNs(const Trace& run);

// A run's step time as `advise` prices it. With step markers, medianStepNs.
// Without, the steps advise infers: the forward/backward passes of `units`
// (stepLayouts), the median of the steady ones; the whole run only when no
// pass is found. `steps` counts the steps the time is the median of.
struct StepTime {
  Ns ns = 0;
  size_t steps = 0;
  bool inferred = false;
};
StepTime stepTime(const Trace& run, const std::vector<std::string>& units);

}  // namespace gcprof::advisor
