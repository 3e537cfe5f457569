// sweepInstants (memory/live_sweep.h), a template: the visitor is inlined.
#pragma once

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "saturating.h"

namespace gcprof::advisor {

template <class Visit>
bool sweepInstants(const std::vector<Allocation>& allocations, const AllocationFilter& filter, Visit&& visit) {
  if (!std::is_sorted(allocations.begin(), allocations.end(),
                      [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; }))
    return false;
  using Free = std::pair<Ns, Bytes>;  // (free time, bytes), soonest on top
  std::priority_queue<Free, std::vector<Free>, std::greater<Free>> frees;
  size_t i = 0;
  while (i < allocations.size() && !filter.counts(allocations[i])) ++i;
  Bytes live = 0;
  while (i < allocations.size() || !frees.empty()) {
    Ns t = i < allocations.size() ? allocations[i].alloc : frees.top().first;
    if (!frees.empty()) t = std::min(t, frees.top().first);
    for (; !frees.empty() && frees.top().first == t; frees.pop()) sat::addTo(live, -frees.top().second);
    for (; i < allocations.size() && allocations[i].alloc == t; ++i) {
      const Allocation& a = allocations[i];
      if (!filter.counts(a)) continue;
      sat::addTo(live, a.bytes);
      if (a.freed()) frees.push({a.free, a.bytes});
    }
    visit(t, live);
    while (i < allocations.size() && !filter.counts(allocations[i])) ++i;
  }
  return true;
}

}  // namespace gcprof::advisor
