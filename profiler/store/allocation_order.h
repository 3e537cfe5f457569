// Putting a run's allocations in (alloc_ns, id) order, the order every reader
// of a Trace relies on. The recorder writes a block when it is freed, so the
// rows read come in free order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "allocation_blocks.h"
#include "trace.h"

namespace gcprof {

// Appends the rows of `read` to `out` by allocation time, then id, giving
// back each of read's blocks once its rows are all in `out` (read is empty
// after). Small keys are sorted, not rows: sorting ten million 72-byte rows
// spent most of opening a big trace.
void moveByAllocation(AllocationBlocks& read, std::vector<Allocation>& out);

// Sorts (time, row) pairs as std::sort would, radix-sorting one word a pair
// where time span and rows fit in 64 bits (the GUI's ten million frees).
void sortTimeRows(std::vector<std::pair<Ns, uint32_t>>& pairs);

// The same order in place (through blocks: for rows already in one vector).
void sortByAllocation(std::vector<Allocation>& allocations);

}  // namespace gcprof
