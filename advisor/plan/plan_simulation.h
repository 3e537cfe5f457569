// A plan file replayed on a trace the way advise predicted it: the plan's
// units laid out step by step (over the module tree, the blocks widen their
// sub-modules' windows), the recording's own cost taken off the forward
// times, then the replay simulator. The report and the GUI draw a plan's
// predicted curve through this one path, so that it is the curve advise's
// numbers came from.
#pragma once

#include "units/step_layout.h"
#include "plan/plan_file.h"
#include "simulate/replay_simulator.h"
#include "trace.h"

namespace gcprof::advisor {

struct PlanSimulation {
  RunLayout layout;   // the steps replayed; each complete one holds the units' windows
  Segments segments;  // the plan's segments, as indexes into its units
  Simulation sim;
};

// Simulates `plan` on the trace's primary memory (primaryFilter). Throws
// AdviceError when the plan checkpoints a name that is not one of its units,
// or when the trace has no complete step to replay it on.
PlanSimulation simulatePlan(const Trace& trace, const PlanFile& plan, const SimulationOptions& options = {});

}  // namespace gcprof::advisor
