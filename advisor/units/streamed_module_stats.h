// What `gcprof show` reads from a run's allocations, taken from one read of
// a run handed over a piece at a time (allocation_stream.h) instead of its
// loaded rows: which memory counts and its peak (surveyCurve), the modules
// (moduleStats with that memory) and the FSDP gathers. Only the ranges are
// held, never the rows (56 bytes each: 560 MB of a 10M-allocation run).
#pragma once

#include <vector>

#include "memory/streamed_curve.h"
#include "trace.h"
#include "units/module_stats.h"
#include "units/parameter_gathers.h"

namespace gcprof::advisor {

struct StreamedModuleStats {
  CurveSurvey survey;  // filter: primaryFilter of the rows; peak: allocationsPeak's
  std::vector<ModuleStats> modules;     // moduleStats(trace, survey.filter)
  std::vector<ParameterGather> gathers;
};

// `ranges`: the run's (a Trace without its allocations holds them);
// `allocations` is called once. Throws AdviceError when the rows are not in
// time order.
StreamedModuleStats streamedModuleStats(const std::vector<Range>& ranges, const AllocationPass& allocations);

}  // namespace gcprof::advisor
