// The plans that do not look at the budget: none, every (each unit its own
// segment, the common practice) and uniform (Chen et al. 2016: segments of
// k = round(sqrt(N)) units; with single-module segments, every k-th unit).
#pragma once

#include "chain/chain_peak.h"
#include "solve/strategy.h"

namespace gcprof::advisor {

Segments everyUnit(int units);
Segments uniformSegments(int units, int length, SegmentKind kind);
Segments uniformPlan(int units, SegmentKind kind);  // length round(sqrt(N))

}  // namespace gcprof::advisor
