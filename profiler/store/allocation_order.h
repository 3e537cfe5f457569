// Putting a run's allocations in (alloc_ns, id) order, the order every reader
// of a Trace relies on. The recorder writes a block when it is freed, so the
// rows read come in free order.
#pragma once

#include <cstdint>
#include <vector>

#include "allocation_blocks.h"
#include "trace.h"

namespace gcprof {

// Appends the rows of `read` to `out` by allocation time, then id, giving
// back each of read's blocks once its rows are all in `out` (read is empty
// after). Small keys are sorted, not rows: sorting ten million 56-byte rows
// spent most of opening a big trace.
void moveByAllocation(AllocationBlocks& read, std::vector<Allocation>& out);

// The same order in place (through blocks: for rows already in one vector).
void sortByAllocation(std::vector<Allocation>& allocations);

}  // namespace gcprof
