// sweepInstants (memory/live_sweep.h), a template: the visitor is inlined.
#pragma once

#include <algorithm>

#include "memory/free_queue.h"
#include "saturating.h"

namespace gcprof::advisor {

inline bool sweepable(const std::vector<Allocation>& allocations, const AllocationFilter& filter) {
  for (size_t i = 0; i < allocations.size(); ++i) {
    const Allocation& a = allocations[i];
    if (i > 0 && a.alloc < allocations[i - 1].alloc) return false;
    // A FreeQueue's times are not negative (a row that counts is freed after it is made).
    if (filter.counts(a) && a.alloc < 0) return false;
  }
  return true;
}

template <class Visit>
bool sweepInstants(const std::vector<Allocation>& allocations, const AllocationFilter& filter, Visit&& visit) {
  if (!sweepable(allocations, filter)) return false;
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
