#include "live_set.h"

#include <algorithm>

namespace gcprof::view {

std::vector<size_t> liveAllocations(const Trace& trace, const SeriesAssignment& series, Ns t) {
  std::vector<size_t> out;
  const auto& allocs = trace.allocations;
  // Allocations are stored by allocation time; nothing after t can be live.
  size_t end = static_cast<size_t>(
      std::upper_bound(allocs.begin(), allocs.end(), t,
                       [](Ns v, const Allocation& a) { return v < a.alloc; }) -
      allocs.begin());
  for (size_t i = 0; i < end; ++i) {
    const Allocation& a = allocs[i];
    if (series.seriesOf(i) == kSeriesIgnored) continue;
    if (a.freed() && a.free <= t) continue;
    out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](size_t x, size_t y) { return allocs[x].bytes > allocs[y].bytes; });
  return out;
}

}  // namespace gcprof::view
