#include "chain/checkpointed_forward.h"

#include <algorithm>

#include "chain/in_place_outputs.h"
#include "units/step_regions.h"
#include "saturating.h"

namespace gcprof::advisor {

namespace {

// The first of `rows` (in time order) born after `t`, searched from `from`
// on, where every row before `from` is born at or before `t`: galloping, so
// that times asked in increasing order, close together, cost a few looks
// near the last answer instead of a search of every row.
size_t firstBornAfter(const std::vector<Allocation>& rows, Ns t, size_t from) {
  size_t lo = from, hi = from, stride = 1;
  while (hi < rows.size() && rows[hi].alloc <= t) {
    lo = hi + 1;
    hi += stride;
    stride *= 2;
  }
  hi = std::min(hi, rows.size());
  return static_cast<size_t>(std::upper_bound(rows.begin() + static_cast<std::ptrdiff_t>(lo),
                                              rows.begin() + static_cast<std::ptrdiff_t>(hi), t,
                                              [](Ns v, const Allocation& a) { return v < a.alloc; }) -
                             rows.begin());
}

}  // namespace

CheckpointedForward::CheckpointedForward(const Trace& trace, const AllocationFilter& filter) : trace_(&trace) {
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward && r.output_bytes > 0 && r.end > r.start)
      modules_.push_back(&r);
  std::sort(modules_.begin(), modules_.end(), [](const Range* a, const Range* b) { return a->start < b->start; });
  for (const Range* m : modules_) spans_.push_back({m->start, m->end, m->thread});
  findOutputs(trace, filter);
}

// A module's outputs: of what it made, still alive when it returns, the
// latest born until they cover its output bytes. The modules are taken by
// their end, so that where each one's rows end is found on from the last.
void CheckpointedForward::findOutputs(const Trace& trace, const AllocationFilter& filter) {
  const std::vector<Allocation>& rows = trace.allocations;
  std::vector<size_t> by_end(modules_.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  std::sort(by_end.begin(), by_end.end(), [&](size_t x, size_t y) { return modules_[x]->end < modules_[y]->end; });
  outputs_.assign(modules_.size(), {});
  size_t end = 0;  // the first row born after the module ends
  for (size_t i : by_end) {
    const Range& m = *modules_[i];
    end = firstBornAfter(rows, m.end, end);
    std::vector<const Allocation*>& out = outputs_[i];
    Bytes covered = 0;
    for (size_t row = end; row > 0 && rows[row - 1].alloc >= m.start && covered < m.output_bytes; --row) {
      const Allocation& a = rows[row - 1];
      if (!filter.matches(a) || a.bytes <= 0 || (a.freed() && a.free <= m.end)) continue;
      out.push_back(&a);
      covered += a.bytes;
    }
    std::sort(out.begin(), out.end());
  }
}

Ns CheckpointedForward::freeTime(const Allocation& a, Ns unit_start, Ns unit_end) const {
  auto end = std::upper_bound(spans_.begin(), spans_.end(), a.alloc, [](Ns t, const Span& m) { return t < m.start; });
  auto begin = std::lower_bound(spans_.begin(), end, unit_start, [](const Span& m, Ns t) { return m.start < t; });
  return freedAmong(a, begin, end, unit_start, unit_end);
}

Ns CheckpointedForward::freeTime(const Allocation& a, const Window& w) const {
  // Of the window's sub-modules, those that start at or before a's birth
  // (any that start after the window end after it too: never a's).
  const auto begin = spans_.begin() + static_cast<std::ptrdiff_t>(w.first);
  const auto end = std::upper_bound(begin, spans_.begin() + static_cast<std::ptrdiff_t>(w.last), a.alloc,
                                    [](Ns t, const Span& m) { return t < m.start; });
  return freedAmong(a, begin, end, w.start, w.end);
}

Ns CheckpointedForward::freedAmong(const Allocation& a, std::vector<Span>::const_iterator begin,
                                   std::vector<Span>::const_iterator end, Ns unit_start, Ns unit_end) const {
  // The sub-modules around a's birth, innermost (latest start) first.
  const int64_t thread = trace_->contextOf(a).thread;
  for (auto it = end; it != begin;) {
    const Span& m = *--it;
    const size_t i = static_cast<size_t>(it - spans_.begin());
    if (m.end < a.alloc || m.end > unit_end || m.thread != thread) continue;
    if (m.start == unit_start && m.end == unit_end) continue;  // the unit itself
    if (!std::binary_search(outputs_[i].begin(), outputs_[i].end(), &a)) return m.end;
  }
  return unit_end;
}

CheckpointedForward::Window CheckpointedForward::window(Ns unit_start, Ns unit_end) const {
  auto first = std::lower_bound(spans_.begin(), spans_.end(), unit_start, [](const Span& m, Ns t) { return m.start < t; });
  auto last = std::upper_bound(first, spans_.end(), unit_end, [](Ns t, const Span& m) { return t < m.start; });
  return {unit_start, unit_end, static_cast<size_t>(first - spans_.begin()), static_cast<size_t>(last - spans_.begin())};
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
  const CheckpointedForward::Window window = forward.window(u.fwd_start, u.fwd_end);
  auto it = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), u.fwd_start,
                             [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (; it != trace.allocations.end() && it->alloc <= u.fwd_end; ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || !a.freed() || a.free <= a.alloc || &a == kept_output) continue;
    if (!reg.contains(p, a.alloc)) continue;
    if (const OpCall* call = saved.empty() ? nullptr : callAt(saved, a.alloc)) {
      // A saved output autograd does not keep: the cache holds it past its
      // recorded free, to the replay (plan_events.cpp).
      if (a.free <= u.fwd_end && outputFate(a, *call, reg, k) == OutputFate::Lingering)
        early.push_back({a.free, a.bytes});
      continue;
    }
    // Born in F_k, freed in B_k (backwardPosition(regionOf(free)) == p).
    if (!reg.contains(reg.backward(k), a.free)) continue;
    Ns t = forward.freeTime(a, window);
    if (t < u.fwd_end) early.push_back({t, -a.bytes});
  }
  if (early.empty()) return -1;
  // The recorded level through the forward with the early frees merged in,
  // counted at the end of each instant; at equal times frees go first, the
  // recorded ones before the early ones (the recorded events are in order:
  // only the early frees, made in allocation order, are sorted).
  std::stable_sort(early.begin(), early.end(),
                   [](const MemoryEvent& x, const MemoryEvent& y) { return x.time < y.time; });
  const RecordedEvents& events = level.events();
  size_t r = events.firstAt(u.fwd_start), e = 0;
  Bytes live = level.at(r);
  Bytes peak = live;
  MemoryEvent next{};  // events[r], when have_next: r is still in the forward
  bool have_next = false;
  auto read = [&] { have_next = r < events.size() && (next = events[r]).time <= u.fwd_end; };
  read();
  while (have_next || e < early.size()) {
    const bool take_early = e < early.size() && (!have_next || early[e].time < next.time ||
                                                 (early[e].time == next.time && next.delta >= 0));
    const MemoryEvent ev = take_early ? early[e++] : next;
    if (!take_early) {
      events.prefetch(++r + RecordedEvents::kPrefetch);
      read();
    }
    sat::addTo(live, ev.delta);
    if ((!have_next || next.time != ev.time) && (e == early.size() || early[e].time != ev.time))
      peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace gcprof::advisor
