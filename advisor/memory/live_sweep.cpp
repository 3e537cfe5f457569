#include "memory/live_sweep.h"

#include <algorithm>

#include "memory/curve_downsampler.h"
#include "memory/memory_events.h"

namespace gcprof::advisor {

bool inTimeOrder(const std::vector<Allocation>& allocations) {
  return std::is_sorted(allocations.begin(), allocations.end(),
                        [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
}

MemoryCurve downsampledCurve(const std::vector<Allocation>& allocations, const AllocationFilter& filter,
                             size_t max_points) {
  MemoryCurve c;
  c.filter = filter;
  size_t n = 0;  // the curve's points: one pass to count them, one to keep
  if (!sweepInstants(allocations, filter, [&](Ns, Bytes) { ++n; })) {
    c = memoryCurveOf(memoryEvents(allocations, filter), filter);
    c.points = downsample(c.points, max_points);
    return c;
  }
  CurveDownsampler points(n, max_points);
  c.points.reserve(points.keptAtMost(max_points));
  auto keep = [&](const MemoryPoint& p) { c.points.push_back(p); };
  sweepInstants(allocations, filter, [&](Ns t, Bytes live) {
    if (live > c.peak) {
      c.peak = live;
      c.peak_time = t;
    }
    c.live_at_end = live;
    points.add({t, live}, keep);
  });
  points.finish(keep);
  return c;
}

}  // namespace gcprof::advisor
