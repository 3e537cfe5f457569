#include "memory/streamed_curve.h"

#include <array>

#include "advice_error.h"
#include "memory/curve_downsampler.h"
#include "memory/instant_sweep.h"

namespace gcprof::advisor {
namespace {

[[noreturn]] void outOfOrder() {
  throw AdviceError("the allocations are not in time order (is the trace damaged?)");
}

// One candidate memory of primaryFilter: its curve's points and peak.
struct Candidate {
  explicit Candidate(const AllocationFilter& f) : filter(f), sweep(f) {}
  AllocationFilter filter;
  InstantSweep sweep;
  size_t points = 0;
  Bytes peak = 0;
  Ns peak_time = 0;
  Bytes live = 0;
  void visit(Ns t, Bytes level) {
    ++points;
    live = level;
    if (level > peak) {
      peak = level;
      peak_time = t;
    }
  }
};

AllocationFilter deviceFilter(AllocKind kind) {
  AllocationFilter f;
  f.device = true;
  f.kind = kind;
  return f;
}

}  // namespace

CurveSurvey surveyCurve(const AllocationPass& pass) {
  // Which memory counts is known only at the end (any device row makes it
  // device memory, any device tensor row tensors): the three candidates are
  // swept at once. A row counts in one of them at most.
  std::array<Candidate, 3> c{Candidate(hostFilter()), Candidate(deviceFilter(AllocKind::Tensor)),
                             Candidate(deviceFilter(AllocKind::Segment))};
  bool device_tensor = false, device_segment = false;
  CurveSurvey s;
  pass([&](const std::vector<Allocation>& rows) {
    if (!rows.empty() && !s.any_rows) {
      s.any_rows = true;
      s.first_alloc = rows.front().alloc;
    }
    for (const Allocation& a : rows) {
      if (a.device >= 0) {
        if (a.kind == static_cast<int>(AllocKind::Segment))
          device_segment = true;
        else
          device_tensor = true;
      }
      for (Candidate& k : c)
        if (!k.sweep.add(a, [&](Ns t, Bytes live) { k.visit(t, live); })) outOfOrder();
    }
  });
  for (Candidate& k : c) k.sweep.finish([&](Ns t, Bytes live) { k.visit(t, live); });
  const Candidate& chosen = !(device_tensor || device_segment) ? c[0] : device_tensor ? c[1] : c[2];
  s.filter = chosen.filter;
  s.points = chosen.points;
  s.peak = chosen.peak;
  s.peak_time = chosen.peak_time;
  s.live_at_end = chosen.live;
  return s;
}

void downsampledPoints(const AllocationPass& pass, const CurveSurvey& survey, size_t max_points,
                       const std::function<void(const MemoryPoint&)>& keep) {
  InstantSweep sweep(survey.filter);
  CurveDownsampler points(survey.points, max_points);
  auto visit = [&](Ns t, Bytes live) {
    if (points.seen() == survey.points) throw AdviceError("the allocations changed between two reads");
    points.add({t, live}, keep);
  };
  pass([&](const std::vector<Allocation>& rows) {
    for (const Allocation& a : rows)
      if (!sweep.add(a, visit)) outOfOrder();
  });
  sweep.finish(visit);
  if (points.seen() != survey.points) throw AdviceError("the allocations changed between two reads");
  points.finish(keep);
}

}  // namespace gcprof::advisor
