#include "simulate/peak_moment.h"

#include "units/step_regions.h"

namespace gcprof::advisor {
namespace {

using Kind = PeakMoment::Kind;

// The recorded instant `t` inside the layout's steps.
PeakMoment recordedMoment(const RunLayout& layout, Ns t) {
  PeakMoment m;
  for (const StepLayout& step : layout.steps) {
    if (t < step.start || t > step.end) continue;
    m.step = step.step;
    if (!step.complete) {
      m.kind = Kind::IncompleteStep;
      return m;
    }
    StepRegions reg(step);
    int r = reg.regionOf(t), n = reg.units();
    if (r == StepRegions::kOutside) {
      m.kind = t < reg.begin() ? Kind::BeforeUnits : Kind::AfterUnits;
    } else if (r < 2 * n) {  // F_k = 2k, FG_k = 2k + 1 (FG_{N-1}: between forward and backward)
      m.unit = r / 2;
      m.kind = r % 2 == 0 ? Kind::Forward : Kind::AfterForward;
    } else {  // B_k = 2N + 2(N-1-k), BG_k = B_k + 1
      int j = r - 2 * n;
      m.unit = n - 1 - j / 2;
      m.kind = j % 2 == 0 ? Kind::Backward : Kind::AfterBackward;
    }
    return m;
  }
  return m;  // outside every step
}

}  // namespace

PeakMoment peakMoment(const RunLayout& layout, const Segments& plan, const Simulation& sim) {
  if (sim.peak_replay_offset < 0) return recordedMoment(layout, sim.peak_at);
  // A replay is anchored where its segment's backward begins, in one complete step.
  for (const StepLayout& step : layout.steps) {
    if (!step.complete) continue;
    for (const Segment& seg : plan) {
      if (seg.last >= static_cast<int>(step.units.size()) || step.units[seg.last].bwd_start != sim.peak_at)
        continue;
      PeakMoment m;
      m.kind = Kind::Recompute;
      m.step = step.step;
      m.first = seg.first;
      m.last = seg.last;
      // The unit whose forward the replay is in (or has just left).
      Ns replayed = step.units[seg.first].fwd_start + sim.peak_replay_offset;
      m.unit = seg.first;
      for (int k = seg.first; k <= seg.last; ++k)
        if (step.units[k].fwd_start <= replayed) m.unit = k;
      return m;
    }
  }
  return recordedMoment(layout, sim.peak_at);  // not a replay of this plan: say where it is anyway
}

std::string PeakMoment::describe(const std::vector<std::string>& names) const {
  auto name = [&](int k) {
    return k >= 0 && k < static_cast<int>(names.size()) ? names[k] : "unit " + std::to_string(k);
  };
  std::string in_step = step >= 0 ? ", step " + std::to_string(step) : "";
  switch (kind) {
    case Kind::OutsideSteps: return "outside the recorded steps (set-up, parameters)";
    case Kind::IncompleteStep: return "in a step whose units were not all recorded" + in_step;
    case Kind::BeforeUnits: return "before the first unit's forward (inputs, embeddings)" + in_step;
    case Kind::Forward: return "in the forward of " + name(unit) + in_step;
    case Kind::AfterForward:
      if (unit + 1 == static_cast<int>(names.size()))
        return "between the last forward and the first backward" + in_step;
      return "after the forward of " + name(unit) + in_step;
    case Kind::Backward: return "in the backward of " + name(unit) + in_step;
    case Kind::AfterBackward: return "after the backward of " + name(unit) + in_step;
    case Kind::AfterUnits: return "after the first unit's backward (optimizer step, gradients)" + in_step;
    case Kind::Recompute:
      if (first == last) return "recomputing " + name(unit) + " for its backward" + in_step;
      return "recomputing " + name(unit) + " of the segment " + name(first) + ".." + name(last) + in_step;
  }
  return "";
}

}  // namespace gcprof::advisor
