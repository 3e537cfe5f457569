#include "model/memory_events.h"

#include <algorithm>

namespace gcprof::advisor {

std::vector<MemoryEvent> memoryEvents(const std::vector<Allocation>& allocations,
                                      const AllocationFilter& filter) {
  std::vector<MemoryEvent> events;
  events.reserve(allocations.size() * 2);
  for (const Allocation& a : allocations) {
    if (!filter.matches(a) || a.bytes <= 0) continue;
    if (a.freed() && a.free <= a.alloc) continue;
    events.push_back({a.alloc, a.bytes});
    if (a.freed()) events.push_back({a.free, -a.bytes});
  }
  std::sort(events.begin(), events.end(), [](const MemoryEvent& x, const MemoryEvent& y) {
    if (x.time != y.time) return x.time < y.time;
    return x.delta < y.delta;  // frees (negative) first
  });
  return events;
}

}  // namespace gcprof::advisor
