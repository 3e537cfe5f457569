// Putting a run's allocations in (alloc_ns, id) order, the order every reader
// of a Trace relies on. The recorder writes a block when it is freed, so the
// rows read come in free order.
#pragma once

#include <vector>

#include "trace.h"

namespace gcprof {

// Sorts by allocation time, then id. Sorting ten million 88-byte rows in
// place spent most of opening a big trace (introsort fell back to heapsort
// on the recorder's order, moving whole rows each time): small keys are
// sorted instead and the rows moved once, along the permutation's cycles.
void sortByAllocation(std::vector<Allocation>& allocations);

}  // namespace gcprof
