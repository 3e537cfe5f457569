// The memory counter of a run read a piece at a time (allocation_stream.h)
// instead of loaded whole: downsampledCurve (live_sweep.h) with
// primaryFilter's filter, in two passes over the rows, holding only the
// live blocks' frees and a piece. The first pass learns what downsampling
// needs before the first point (which memory counts, the peak, how many
// points there are); the second hands over the points kept.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "memory/memory_curve.h"
#include "trace.h"

namespace gcprof::advisor {

// Takes one piece of a run's allocations (valid during the call).
using AllocationPiece = std::function<void(const std::vector<Allocation>& rows)>;
// Hands every allocation of a run to `take`, by time, a piece at a time;
// called once per pass, the same rows each time.
using AllocationPass = std::function<void(const AllocationPiece& take)>;

struct CurveSurvey {
  AllocationFilter filter;   // primaryFilter of the rows
  size_t points = 0;         // of the whole curve (before downsampling)
  Bytes peak = 0;
  Ns peak_time = 0;
  Bytes live_at_end = 0;
  bool any_rows = false;
  Ns first_alloc = 0;        // the first row's (every row counts, not only the filter's)
};

// The first pass. Throws AdviceError when the rows are not in time order.
CurveSurvey surveyCurve(const AllocationPass& pass);

// The second: calls keep(point) with each point of
// downsampledCurve(rows, survey.filter, max_points), in order. Throws
// AdviceError when the rows are not those surveyed.
void downsampledPoints(const AllocationPass& pass, const CurveSurvey& survey, size_t max_points,
                       const std::function<void(const MemoryPoint&)>& keep);

}  // namespace gcprof::advisor
