// The allocations live at one moment (the cursor), largest first, for the
// "live at cursor" table. O(allocations made before t): run when the cursor
// is placed, not per frame.
#pragma once

#include <vector>

#include "series_assignment.h"
#include "trace.h"

namespace gcprof::view {

// Indices into trace.allocations of the counted allocations live at `t`
// (allocated at or before t, not yet freed), largest first.
std::vector<size_t> liveAllocations(const Trace& trace, const SeriesAssignment& series, Ns t);

}  // namespace gcprof::view
