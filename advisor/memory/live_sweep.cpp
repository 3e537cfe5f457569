#include "memory/live_sweep.h"

#include <algorithm>

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
  const bool all = max_points < 2 || n <= max_points;
  const size_t per = all ? 1 : (n + max_points - 1) / max_points;
  c.points.reserve(all ? n : max_points + 1);
  // downsample's buckets of `per` points: each keeps its highest (the
  // first of equals), and the last point closes the curve.
  size_t k = 0;
  MemoryPoint best, last;
  sweepInstants(allocations, filter, [&](Ns t, Bytes live) {
    last = {t, live};
    if (live > c.peak) {
      c.peak = live;
      c.peak_time = t;
    }
    if (k % per == 0 || live > best.live) best = last;
    if (k % per == per - 1 || k + 1 == n) c.points.push_back(best);
    ++k;
  });
  c.live_at_end = last.live;
  if (!all && c.points.back().time != last.time) c.points.push_back(last);
  return c;
}

}  // namespace gcprof::advisor
