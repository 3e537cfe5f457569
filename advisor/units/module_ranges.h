// A run's module ranges (domain Module) grouped by module and step: what the
// per-module numbers (module_stats.h) and the saved-bytes sweep
// (saved_bytes_sweep.h) are both read from, so that the two agree on which
// ranges are a module's forward and backward in a step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

// One module's ranges within one step, in the run's range order.
struct StepRanges {
  std::vector<const Range*> forward;
  std::vector<const Range*> backward;  // every phase but Forward and User
};

// What a module's first range says of it, before any step is counted.
struct ModuleFacts {
  int depth = 0;            // of its first range
  Ns first_forward = 0;     // start of its first forward range; INT64_MAX when
                            // the first range was a backward one and no forward followed
  bool root = false;        // some forward range has no enclosing range
};

struct ModuleRanges {
  // name -> step -> ranges; std::map keeps the steps ordered.
  std::unordered_map<std::string, std::map<int64_t, StepRanges>> by_name;
  std::unordered_map<std::string, ModuleFacts> facts;
};

// Points into `ranges`, which must outlive the result.
ModuleRanges moduleRanges(const std::vector<Range>& ranges);

// The earliest start and latest end of `sr.backward` (not empty): a block
// made in the forward and freed anywhere in that span was held for the
// backward, whichever of the module's backward ranges freed it.
std::pair<Ns, Ns> backwardSpan(const StepRanges& sr);

}  // namespace gcprof::advisor
