#include "memory/memory_curve.h"

#include <algorithm>
#include <cstdint>

#include "memory/memory_events.h"
#include "saturating.h"

namespace gcprof::advisor {

std::string AllocationFilter::describe() const {
  if (!device) return "host";
  return kind == AllocKind::Segment ? "device segments" : "device tensors";
}

AllocationFilter hostFilter() { return AllocationFilter{}; }

AllocationFilter primaryFilter(const Trace& trace) {
  bool device_tensor = false, device_segment = false;
  for (const Allocation& a : trace.allocations) {
    if (a.device < 0) continue;
    if (a.kind == static_cast<int>(AllocKind::Segment))
      device_segment = true;
    else
      device_tensor = true;
  }
  AllocationFilter f;
  if (device_tensor || device_segment) {
    f.device = true;
    f.kind = device_tensor ? AllocKind::Tensor : AllocKind::Segment;
  }
  return f;
}

MemoryCurve memoryCurve(const Trace& trace, const AllocationFilter& filter) {
  return memoryCurveOf(memoryEvents(trace.allocations, filter), filter);
}

MemoryCurve memoryCurveOf(const std::vector<MemoryEvent>& events, const AllocationFilter& filter) {
  MemoryCurve c;
  c.filter = filter;
  Bytes live = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    sat::addTo(live, events[i].delta);
    bool last_at_time = i + 1 == events.size() || events[i + 1].time != events[i].time;
    // Within one timestamp frees come first, so the maximum is reached after
    // the timestamp's last event; no point is lost by keeping only that one.
    if (!last_at_time) continue;
    c.points.push_back({events[i].time, live});
    if (live > c.peak) {
      c.peak = live;
      c.peak_time = events[i].time;
    }
  }
  c.live_at_end = live;
  return c;
}

MemoryCurve memoryCurve(const Trace& trace) { return memoryCurve(trace, primaryFilter(trace)); }

Bytes liveAt(const MemoryCurve& curve, Ns t) {
  auto it = std::upper_bound(curve.points.begin(), curve.points.end(), t,
                             [](Ns v, const MemoryPoint& p) { return v < p.time; });
  return it == curve.points.begin() ? 0 : std::prev(it)->live;
}

std::vector<StepPeak> stepPeaks(const Trace& trace, const MemoryCurve& curve) {
  std::vector<StepPeak> out;
  for (const Step& s : trace.steps) {
    StepPeak p;
    p.step = s.index;
    p.start = s.start;
    p.end = s.end;
    // The level entering the step counts: memory held across steps
    // (parameters, optimizer state) is part of every step's peak.
    p.live_at_start = liveAt(curve, sat::sub(s.start, 1));
    p.peak = p.live_at_start;
    p.peak_time = s.start;
    auto it = std::lower_bound(curve.points.begin(), curve.points.end(), s.start,
                               [](const MemoryPoint& q, Ns v) { return q.time < v; });
    for (; it != curve.points.end() && it->time <= s.end; ++it) {
      if (it->live > p.peak) {
        p.peak = it->live;
        p.peak_time = it->time;
      }
    }
    out.push_back(p);
  }
  return out;
}

std::vector<MemoryPoint> downsample(const std::vector<MemoryPoint>& points, size_t max_points) {
  if (max_points < 2 || points.size() <= max_points) return points;
  std::vector<MemoryPoint> out;
  out.reserve(max_points + 1);
  size_t per = (points.size() + max_points - 1) / max_points;
  for (size_t i = 0; i < points.size(); i += per) {
    size_t end = std::min(points.size(), i + per);
    // Keep the bucket's highest point so that peaks survive in charts.
    MemoryPoint best = points[i];
    for (size_t j = i + 1; j < end; ++j)
      if (points[j].live > best.live) best = points[j];
    out.push_back(best);
  }
  if (out.back().time != points.back().time) out.push_back(points.back());
  return out;
}

}  // namespace gcprof::advisor

namespace gcprof::advisor {

std::vector<StepPeak> stepPeaksOf(const RecordedEvents& events, const std::vector<Step>& steps) {
  // The level before each step is walked on from the last one's: steps out
  // of time order would walk from the start again and again.
  bool in_order = true;
  for (size_t i = 1; i < steps.size(); ++i) in_order = in_order && steps[i - 1].start <= steps[i].start;
  if (!in_order) {
    Trace only_steps;
    only_steps.steps = steps;
    return stepPeaks(only_steps, memoryCurveOf(events.copy(), AllocationFilter{}));
  }
  LevelBefore level(events);
  std::vector<StepPeak> out;
  for (const Step& s : steps) {
    StepPeak p;
    p.step = s.index;
    p.start = s.start;
    p.end = s.end;
    const size_t entering = events.firstAfter(sat::sub(s.start, 1));
    p.live_at_start = level.at(entering);
    p.peak = p.live_at_start;
    p.peak_time = s.start;
    // The first event at or after the start: `entering`, but for a start at
    // the clock's lowest value (where start - 1 saturates), the first event.
    size_t i = s.start == INT64_MIN ? 0 : entering;
    Bytes live = i == entering ? p.live_at_start : 0;
    for (; i < events.size() && events.time(i) <= s.end; ++i) {
      // A whole block by its summary where the event after it is still in
      // the step: the same peak (its first instant at the top) without
      // reading a row per event.
      constexpr size_t kBlock = RecordedEvents::kBlock;
      while (i % kBlock == 0 && i + kBlock < events.size()) {
        const RecordedEvents::Block& block = events.block(i / kBlock);
        if (!block.passableAt(live) || events.block(i / kBlock + 1).head.time > s.end) break;
        if (block.has_top && live + block.top > p.peak) {
          p.peak = live + block.top;
          p.peak_time = events.time(block.top_at);
        }
        live += block.sum;
        i += kBlock;
      }
      if (i >= events.size() || events.time(i) > s.end) break;
      events.prefetch(i + RecordedEvents::kPrefetch);
      const MemoryEvent e = events[i];
      sat::addTo(live, e.delta);
      bool instant_end = i + 1 == events.size() || events.time(i + 1) != e.time;
      if (instant_end && live > p.peak) {
        p.peak = live;
        p.peak_time = e.time;
      }
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace gcprof::advisor
