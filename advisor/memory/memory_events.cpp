#include "memory/memory_events.h"

#include <algorithm>

#include "memory/live_sweep.h"
#include "saturating.h"

namespace gcprof::advisor {

namespace {

bool earlier(const MemoryEvent& x, const MemoryEvent& y) {
  if (x.time != y.time) return x.time < y.time;
  return x.delta < y.delta;  // frees (negative) first
}

}  // namespace

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
  std::sort(events.begin(), events.end(), earlier);
  return events;
}

Bytes LevelBefore::at(size_t i) {
  if (i < next_) {  // asked backwards: start again, so that the sum is the same
    next_ = 0;
    live_ = 0;
  }
  for (; next_ < i && next_ < events_.size(); ++next_) sat::addTo(live_, events_[next_].delta);
  return live_;
}

Bytes eventsPeak(std::vector<MemoryEvent>& events) {
  std::sort(events.begin(), events.end(), earlier);
  return sortedEventsPeak(events);
}

Bytes sortedEventsPeak(const std::vector<MemoryEvent>& events) {
  Bytes live = 0, peak = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    sat::addTo(live, events[i].delta);
    if (i + 1 == events.size() || events[i + 1].time != events[i].time) peak = std::max(peak, live);
  }
  return peak;
}

Bytes allocationsPeak(const std::vector<Allocation>& allocations, const AllocationFilter& filter) {
  Bytes peak = 0;
  if (!sweepInstants(allocations, filter, [&](Ns, Bytes live) { peak = std::max(peak, live); }))
    return sortedEventsPeak(memoryEvents(allocations, filter));
  return peak;
}

}  // namespace gcprof::advisor
