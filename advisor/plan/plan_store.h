// A trace's plans table: advise stores each plan it writes there, and verify
// finds the row a plan file belongs to, so that verifications and reports
// name the plan by id.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "plan/plan_file.h"
#include "trace_store.h"

namespace gcprof::advisor {

// Stores `doc` (a plan as advise writes it) created at `created` on the
// trace's one clock (monotonicNs, docs/schema.md); returns the plan's id.
// Throws StoreError when the trace cannot be written.
int64_t storePlan(TraceStore& store, const nlohmann::json& doc, Ns created);

// The row a plan file belongs to. A plan file carries the `plan_id` that
// advise gave it, but ids are per trace: a plan advised on another trace (or
// edited by hand) may carry an id that names a different plan here, and a
// verification linked to that row would report the wrong plan. So: the
// plan's `plan_id` when this trace's row with that id holds the same plan
// (plan_id aside); otherwise a new row holding it, created at `now`.
int64_t planRow(TraceStore& store, const PlanFile& plan, Ns now);

}  // namespace gcprof::advisor
