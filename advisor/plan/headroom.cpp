#include "plan/headroom.h"

#include <algorithm>
#include <cmath>

#include "byte_text.h"

namespace gcprof::advisor {

Bytes stepPeakJitter(const Trace& trace, const AllocationFilter& filter, int64_t first_step,
                     const std::vector<MemoryEvent>* recorded) {
  std::vector<StepPeak> peaks =
      recorded ? stepPeaksOf(*recorded, trace.steps) : stepPeaks(trace, memoryCurve(trace, filter));
  Bytes lo = -1, hi = 0;
  for (const StepPeak& s : peaks) {
    if (s.step < first_step || s.end <= s.start) continue;
    lo = lo < 0 ? s.peak : std::min(lo, s.peak);
    hi = std::max(hi, s.peak);
  }
  return lo < 0 ? 0 : hi - lo;
}

Headroom resolveHeadroom(const HeadroomRequest& request, Bytes budget, Bytes jitter, bool device) {
  Headroom h;
  h.jitter = jitter;
  if (request.given) {
    // An explicit margin is taken as written: the user may know better
    // (a fixed allocator, a pinned workload) and 0 must mean none.
    h.fraction = request.percent ? request.fraction : 0;
    h.bytes = request.percent ? static_cast<Bytes>(std::llround(request.fraction * static_cast<double>(budget)))
                              : request.bytes;
    h.rule = request.text + (request.percent ? " of the budget" : "") + " (--headroom)";
    return h;
  }
  h.fraction = device ? kDeviceHeadroom : kHostHeadroom;
  h.bytes = static_cast<Bytes>(std::llround(h.fraction * static_cast<double>(budget))) + jitter;
  h.rule = std::to_string(static_cast<int>(std::lround(h.fraction * 100))) + "% of the budget" +
           (device ? " (CUDA allocator rounding)" : "") + " + " + formatBytes(jitter) +
           " step-to-step jitter";
  return h;
}

}  // namespace gcprof::advisor
