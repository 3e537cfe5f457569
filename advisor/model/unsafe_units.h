// Units that must not be checkpointed because recomputing them would not
// replay their forward: modules seen changing an input in place (the python
// shim records the scalar "inplace <module>", module_ranges.py). Checkpointing
// torchvision's ReLU(inplace=True) crashed the job (issue 15); a module whose
// input changes under it would recompute from the changed value.
#pragma once

#include <string>
#include <vector>

#include "model/unit_selection.h"
#include "trace.h"

namespace gcprof::advisor {

struct ExcludedUnit {
  std::string name;
  std::string reason;  // for people: "changes its input in place"
};

// The modules of the run recorded as in-place, in name order.
std::vector<ExcludedUnit> inPlaceModules(const Trace& trace);

// Removes the excluded names from `units`; returns those it removed. Throws
// AdviceError when none is left, naming what was excluded and why.
std::vector<ExcludedUnit> excludeUnsafeUnits(UnitSelection& units, const std::vector<ExcludedUnit>& unsafe);

}  // namespace gcprof::advisor
