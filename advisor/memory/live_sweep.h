// The live bytes of a run instant by instant, swept from its allocations in
// time order (a Trace's) with only the live ones' frees held: what the
// sorted memoryEvents give, without those two events per allocation (330 MB
// of a 10M-allocation run).
#pragma once

#include <cstddef>
#include <vector>

#include "memory/memory_curve.h"
#include "trace.h"

namespace gcprof::advisor {

// Calls visit(time, live) at the end of every instant at which `filter`'s
// allocations change (an instant's frees count before its allocations;
// allocations freed at the instant they were made never count), in time
// order: memoryCurveOf(memoryEvents(allocations, filter)).points, one at a
// time. False when `allocations` are not in time order, found on the way
// (no pass of its own over the rows): the instants visited before are then
// to be dropped.
template <class Visit>
bool sweepInstants(const std::vector<Allocation>& allocations, const AllocationFilter& filter, Visit&& visit);

// By allocation time (a Trace's allocations are).
bool inTimeOrder(const std::vector<Allocation>& allocations);

// memoryCurveOf(memoryEvents(allocations, filter), filter) with its points
// as downsample(points, max_points) leaves them: for charts and exports.
MemoryCurve downsampledCurve(const std::vector<Allocation>& allocations, const AllocationFilter& filter,
                             size_t max_points);

}  // namespace gcprof::advisor

#include "memory/live_sweep_impl.h"
