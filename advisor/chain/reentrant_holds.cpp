#include "chain/reentrant_holds.h"

#include <algorithm>

#include "memory/cache_allocations.h"

namespace gcprof::advisor {

bool reentrantCheckpoint(const Trace& trace) { return trace.run.runtime == "native"; }

ReentrantHolds reentrantHolds(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                              int first, int last) {
  ReentrantHolds h;
  const UnitWindow& unit = step.units[last];
  h.until = step.units[first].bwd_end;
  Ns forwards_end = 0;
  for (const UnitWindow& u : step.units) forwards_end = std::max(forwards_end, u.fwd_end);
  auto usable = [&](const Allocation& a) { return filter.matches(a) && a.bytes > 0 && !keptByTheLibrary(a); };
  auto born_after = [&](Ns t) {
    return std::upper_bound(trace.allocations.begin(), trace.allocations.end(), t,
                            [](Ns v, const Allocation& a) { return v < a.alloc; });
  };
  for (auto it = born_after(forwards_end); it != trace.allocations.end() && it->alloc <= unit.bwd_start; ++it) {
    if (usable(*it) && it->free > unit.bwd_start && it->free <= unit.bwd_end) h.output_grad = &*it;
  }
  if (!h.output_grad) return h;
  auto it = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), unit.fwd_start,
                             [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (; it != trace.allocations.end() && it->alloc <= unit.fwd_end; ++it) {
    if (usable(*it) && it->bytes == h.output_grad->bytes && it->free > unit.fwd_end) h.output = &*it;
  }
  return h;
}

}  // namespace gcprof::advisor
