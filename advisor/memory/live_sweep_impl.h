// sweepInstants (memory/live_sweep.h), a template: the visitor is inlined.
#pragma once

#include <algorithm>

#include "memory/free_queue.h"
#include "saturating.h"

namespace gcprof::advisor {

template <class Visit>
bool sweepInstants(const std::vector<Allocation>& allocations, const AllocationFilter& filter, Visit&& visit) {
  FreeQueue<Bytes> frees;  // the bytes of each
  const size_t n = allocations.size();
  // Each row's time is compared with the last row's as the sweep passes it.
  Ns last = INT64_MIN;
  auto inOrder = [&](size_t k) {
    const bool ordered = allocations[k].alloc >= last;
    last = allocations[k].alloc;
    return ordered;
  };
  size_t i = 0;
  for (; i < n && !filter.counts(allocations[i]); ++i)
    if (!inOrder(i)) return false;
  Bytes live = 0;
  while (i < n || !frees.empty()) {
    Ns t = i < n ? allocations[i].alloc : frees.topTime();
    if (!frees.empty()) t = std::min(t, frees.topTime());
    while (!frees.empty() && frees.topTime() == t) sat::addTo(live, -frees.pop());
    for (; i < n && allocations[i].alloc == t; ++i) {
      if (!inOrder(i)) return false;
      const Allocation& a = allocations[i];
      if (!filter.counts(a)) continue;
      sat::addTo(live, a.bytes);
      if (a.freed()) frees.push(a.free, a.bytes);
    }
    visit(t, live);
    for (; i < n && !filter.counts(allocations[i]); ++i)
      if (!inOrder(i)) return false;
  }
  return true;
}

}  // namespace gcprof::advisor
