// sweepInstants (memory/live_sweep.h), a template: the visitor is inlined.
#pragma once

#include <algorithm>

#include "memory/free_queue.h"
#include "saturating.h"

namespace gcprof::advisor {

template <class Visit>
bool sweepInstants(const std::vector<Allocation>& allocations, const AllocationFilter& filter, Visit&& visit) {
  if (!inTimeOrder(allocations)) return false;
  FreeQueue<Bytes> frees;  // the bytes of each
  size_t i = 0;
  while (i < allocations.size() && !filter.counts(allocations[i])) ++i;
  Bytes live = 0;
  while (i < allocations.size() || !frees.empty()) {
    Ns t = i < allocations.size() ? allocations[i].alloc : frees.topTime();
    if (!frees.empty()) t = std::min(t, frees.topTime());
    while (!frees.empty() && frees.topTime() == t) sat::addTo(live, -frees.pop());
    for (; i < allocations.size() && allocations[i].alloc == t; ++i) {
      const Allocation& a = allocations[i];
      if (!filter.counts(a)) continue;
      sat::addTo(live, a.bytes);
      if (a.freed()) frees.push(a.free, a.bytes);
    }
    visit(t, live);
    while (i < allocations.size() && !filter.counts(allocations[i])) ++i;
  }
  return true;
}

}  // namespace gcprof::advisor
