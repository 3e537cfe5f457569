// A plan's predicted memory curve, from the advisor's replay simulator (the
// same code that chose the plan), so the GUI never re-derives a prediction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan_view.h"
#include "stacked_memory.h"
#include "trace.h"

namespace gcprof::view {

struct PredictedCurve {
  StackedMemory curve;     // on the simulated timeline (recomputation adds time)
  std::vector<Step> steps; // the recorded steps on that timeline, for TimeWarp
};

// The simulated curve, or nullopt with `why` set (the plan names units the
// trace lacks, no complete step, the advisor is not built in, ...).
std::optional<PredictedCurve> predictedCurve(const Trace& trace, const PlanView& plan,
                                             std::string* why);

}  // namespace gcprof::view
