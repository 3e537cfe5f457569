// The free times of blocks written while live (RunWriter::addLive), in the
// table `allocation_frees` (schema version 6, docs/schema.md). A block live
// past kLiveWriteAgeNs is written at once so that a killed job keeps it; a
// row in a batch cannot be updated, and an UPDATE per block of a row of its
// own cost the writer as much as the row itself: a job whose steps outlast
// 50 ms writes most of its blocks live (bench/RESULTS.md, "Cost per module
// call"). The view `allocations` looks each live row's free up there; the
// loader applies them all at once (applyFrees).
#pragma once

#include <vector>

#include "trace.h"

namespace gcprof {

// One block's free, keyed as its row is: (alloc_ns, id) within its run.
struct Free {
  int64_t id = 0;
  Ns alloc = 0;
  Ns free = -1;
};

// Sets the free time of each allocation of `byAlloc` (in (alloc, id)
// order) that a free of `frees` names; a free naming no allocation is
// passed over. Sorts `frees` when they are not in that order already.
void applyFrees(std::vector<Free>& frees, std::vector<Allocation>& byAlloc);

}  // namespace gcprof
