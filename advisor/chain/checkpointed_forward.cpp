#include "chain/checkpointed_forward.h"

#include <algorithm>

#include "chain/in_place_outputs.h"
#include "units/step_regions.h"
#include "saturating.h"

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

Bytes checkpointedForwardPeak(const Trace& trace, const AllocationFilter& filter, const CheckpointedForward& forward,
                              const InPlaceOutputs& inplace, LevelBefore& level,
                              const StepLayout& step, const StepRegions& reg, int k,
                              const std::vector<OpCall>& saved) {
  const UnitWindow& u = step.units[k];
  int p = StepRegions::forward(k);
  const Allocation* kept_output = inplace.output(step, reg, k);
  // What the simulator frees early (replay_simulator.cpp, the dropped branch).
  std::vector<MemoryEvent> early;
  auto it = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), u.fwd_start,
                             [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (; it != trace.allocations.end() && it->alloc <= u.fwd_end; ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || !a.freed() || a.free <= a.alloc || &a == kept_output) continue;
    if (reg.regionOf(a.alloc) != p || reg.backwardPosition(reg.regionOf(a.free)) != p) continue;
    if (!saved.empty() && callAt(saved, a.alloc)) continue;
    Ns t = forward.freeTime(a, u.fwd_start, u.fwd_end);
    if (t < u.fwd_end) early.push_back({t, -a.bytes});
  }
  if (early.empty()) return -1;
  // The recorded level through the forward, the early frees merged in
  // (frees first at equal times, counted at the end of each instant).
  const RecordedEvents& events = level.events();
  const size_t first = events.firstAt(u.fwd_start);
  Bytes live = level.at(first);
  std::vector<MemoryEvent> ev;
  for (size_t i = first; i < events.size() && events.time(i) <= u.fwd_end; ++i) ev.push_back(events[i]);
  ev.insert(ev.end(), early.begin(), early.end());
  std::stable_sort(ev.begin(), ev.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
    return a.time != b.time ? a.time < b.time : (a.delta < 0) > (b.delta < 0);
  });
  Bytes peak = live;
  for (size_t i = 0; i < ev.size(); ++i) {
    sat::addTo(live, ev[i].delta);
    if (i + 1 == ev.size() || ev[i + 1].time != ev[i].time) peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace gcprof::advisor
