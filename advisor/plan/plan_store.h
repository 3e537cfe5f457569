// Storing a plan in the trace's plans table, so that verify and the reports
// find it by id: what advise stores when it writes a plan, and what verify
// stores for a plan file the trace does not hold yet (verify/plan_row.h).
#pragma once

#include <nlohmann/json.hpp>

#include "trace_store.h"

namespace gcprof::advisor {

// Stores `doc` (a plan as advise writes it) created at `created` on the
// trace's one clock (monotonicNs, docs/schema.md); returns the plan's id.
// Throws StoreError when the trace cannot be written.
int64_t storePlan(TraceStore& store, const nlohmann::json& doc, Ns created);

}  // namespace gcprof::advisor
