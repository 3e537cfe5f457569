#include "model/checkpointed_forward.h"

#include <algorithm>

namespace gcprof::advisor {

CheckpointedForward::CheckpointedForward(const Trace& trace, const AllocationFilter& filter)
    : trace_(trace), filter_(filter) {
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward && r.output_bytes > 0 && r.end > r.start)
      modules_.push_back(&r);
  std::sort(modules_.begin(), modules_.end(), [](const Range* a, const Range* b) { return a->start < b->start; });
}

const std::unordered_set<const Allocation*>& CheckpointedForward::outputsOf(const Range& m) const {
  auto found = outputs_.find(&m);
  if (found != outputs_.end()) return found->second;
  std::vector<const Allocation*> alive;  // born in m, alive when it returns
  auto it = std::lower_bound(trace_.allocations.begin(), trace_.allocations.end(), m.start,
                             [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (; it != trace_.allocations.end() && it->alloc <= m.end; ++it)
    if (filter_.matches(*it) && it->bytes > 0 && (!it->freed() || it->free > m.end)) alive.push_back(&*it);
  std::unordered_set<const Allocation*>& out = outputs_[&m];
  Bytes covered = 0;
  for (auto a = alive.rbegin(); a != alive.rend() && covered < m.output_bytes; ++a) {  // latest first
    out.insert(*a);
    covered += (*a)->bytes;
  }
  return out;
}

Ns CheckpointedForward::freeTime(const Allocation& a, Ns unit_start, Ns unit_end) const {
  // The sub-modules around a's birth, innermost (latest start) first.
  auto end = std::upper_bound(modules_.begin(), modules_.end(), a.alloc,
                              [](Ns t, const Range* r) { return t < r->start; });
  auto begin = std::lower_bound(modules_.begin(), end, unit_start,
                                [](const Range* r, Ns t) { return r->start < t; });
  for (auto it = end; it != begin;) {
    const Range& m = **--it;
    if (m.end < a.alloc || m.end > unit_end || m.thread != a.thread) continue;
    if (m.start == unit_start && m.end == unit_end) continue;  // the unit itself
    if (!outputsOf(m).count(&a)) return m.end;
  }
  return unit_end;
}

}  // namespace gcprof::advisor
