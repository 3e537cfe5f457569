// Per-unit numbers for the units table: forward time (the recompute cost),
// saved bytes (allocated in the unit's forward and freed in its backward of
// the same step: what checkpointing it removes), and what the selected plan
// does with it. Averaged over the steady-state steps (all but the first when
// there are several, since step 0 allocates optimizer state and warms caches).
#pragma once

#include <string>
#include <vector>

#include "plan_view.h"
#include "series_assignment.h"
#include "trace.h"

namespace gcprof::view {

struct UnitStats {
  std::string name;
  Rgba colour;
  double forward_ns = 0;     // mean per steady step
  double saved_bytes = 0;    // mean per steady step
  bool checkpointed = false; // in the selected plan
  std::string checkpointed_as;  // the module wrapped: the unit, or the block it belongs to
  size_t saved_ops = 0;      // selective: operator outputs the plan keeps (0: whole)
  double predicted_saving = 0;
};

std::vector<UnitStats> unitStats(const Trace& trace, const SeriesAssignment& series);
// Fills `checkpointed` and `predicted_saving` from `plan` (nullptr = none).
void applyPlan(std::vector<UnitStats>& stats, const PlanView* plan);

}  // namespace gcprof::view
