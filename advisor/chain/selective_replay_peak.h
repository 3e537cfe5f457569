// The memory a selective replay makes, measured on the trace, so that the
// chain peak of a plan with selective segments is exact (chain_peak.h).
//
// Replaying unit k with a save-list re-makes every allocation born in its
// forward F_k except those born inside the saved calls: those stay alive
// from the forward (they are the kept bytes) and are not made again. A
// re-made allocation lives as recorded when it was freed within F_k, and to
// the replay's end otherwise. Its peak is therefore the most bytes alive at
// once among F_k's allocations born outside the saved calls, each freed
// where it was when that is inside F_k, kept otherwise: the whole unit's
// born_peak (unit_chain.h) with the saved calls' allocations taken out.
// Saved outputs that linger (torchtitan's rule, selective_options.h) are
// alive when the replay begins and freed where they were in F_k: they count
// as a drop at that moment. Taken over the complete steps (the highest).
#pragma once

#include <string>
#include <vector>

#include "memory/memory_curve.h"
#include "chain/selective_options.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

// Per unit (ops[k] for unit k in layout order, whose whole checkpoint drops
// dropped[k]), the saveable calls (isSaveable) that end before the moment
// its whole replay is highest, in the step where that replay is highest.
// What they keep is alive at that moment anyway (a kept output is freed in
// the backward, after the replay): saving them leaves the replay's peak
// where it was, or lowers it, and spares their recompute. A save-list the
// solver may find free at the plan's peak when the peak is that replay's
// ("at every's peak", docs/plan.md).
std::vector<std::vector<std::string>> callsBeforeReplayPeak(const std::vector<std::vector<UnitOp>>& ops,
                                                            const std::vector<Bytes>& dropped,
                                                            const Trace& trace, const AllocationFilter& filter,
                                                            const RunLayout& layout);

// Sets replay_peak of every option of every unit (options[k] for unit k in
// layout order) from the trace's operator ranges.
void measureReplayPeaks(std::vector<std::vector<SelectiveOption>>& options, const Trace& trace,
                        const AllocationFilter& filter, const RunLayout& layout);

}  // namespace gcprof::advisor
