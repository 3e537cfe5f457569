// Which row of a trace's plans table a plan file belongs to. A plan file
// carries the `plan_id` that advise gave it, but ids are per trace: a plan
// advised on another trace (or edited by hand) may carry an id that names a
// different plan here, and a verification linked to that row would report
// the wrong plan.
#pragma once

#include <cstdint>

#include "plan/plan_file.h"
#include "trace_store.h"

namespace gcprof::advisor {

// The plan's `plan_id` when this trace's row with that id holds the same plan
// (plan_id aside); otherwise a new row holding it, created at `now`.
int64_t planRow(TraceStore& store, const PlanFile& plan, Ns now);

}  // namespace gcprof::advisor
