// The bytes each forward position of a step leaves for the backward, filed
// in drop buckets by the units that make and free them: what a checkpoint
// over those units drops (unit_chain.h), and what a step that skipped a
// unit (LayerDrop) lacks of it.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "chain/in_place_outputs.h"
#include "units/step_layout.h"
#include "units/step_regions.h"
#include "trace.h"

namespace gcprof::advisor {

// Born-in-position and drop-bucket bookkeeping for one complete step.
struct BornStats {
  std::vector<Bytes> kept, peak;
  std::map<std::pair<int, int>, Bytes> buckets;  // (first unit, last unit) -> bytes
};

// A unit's output that the trace frees in the unit's own backward (it saved
// its own result, chain/in_place_outputs.h) is held by its consumer when the
// unit ends a checkpoint: only a checkpoint that also holds the next unit
// drops it, so it goes to the bucket (k, k + 1), as the simulator prices it.
BornStats bornStats(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                    const StepRegions& reg, const InPlaceOutputs& inplace);

// The drop a plan can count on for each bucket (first, last): the smallest
// that the steps in which all its units ran show. A step that skipped one
// of them (LayerDrop, step_layout.h) has nothing of it to drop, and none of
// its memory either; skipCredit makes up for it.
std::map<std::pair<int, int>, Bytes> smallestDrops(const std::vector<const StepLayout*>& steps,
                                                   const std::vector<BornStats>& born);

// What one step lacks of the drops the chain counts on, by unit position:
// credit[k] bounds what a plan's segments that end before unit k drop, by
// the chain's count, beyond what they drop in this step; the chain
// subtracts exactly those drops from the moments at k, so the step's
// moments there, raised by credit[k], stay at least what the simulator
// finds in it under any plan. 0 in a step where every unit ran (it drops
// at least the chain's count of every bucket). Where LayerDrop skipped a
// unit, the step lacks that unit's drops but also the memory they are, so
// it is priced as if the unit had held there what it drops in the steps it
// ran in: near the level of those steps, which the envelope has anyway.
// The step's own buckets that the chain does not count (the output of the
// unit before the skipped one, read by the one after it: (k-1, k+1)) are
// dropped by every segment that drops the chain's (k-1, k) and (k, k+1)
// there, so the bound is the most over all plans of the lacking bytes of
// their segments, a longest-path over the unit positions, not their sum.
std::vector<Bytes> skipCredit(const StepLayout& step, const BornStats& b,
                              const std::map<std::pair<int, int>, Bytes>& drops, int n);

}  // namespace gcprof::advisor
