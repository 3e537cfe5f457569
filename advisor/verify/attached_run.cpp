#include "verify/attached_run.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "byte_text.h"
#include "memory/memory_curve.h"
#include "saturating.h"

namespace gcprof::advisor {

AttachedBaseline attachedBaseline(const Trace& baseline) {
  AttachedBaseline a;
  for (const Scalar& s : baseline.scalars) {
    if (s.name == "attach_step" && !a.attached) {
      a.attached = true;
      a.first_step = static_cast<int64_t>(s.value);
    } else if (s.name == "attach_step_unknown") {
      a.numbered_by_job = false;
    }
  }
  if (!a.attached) a.numbered_by_job = true;
  return a;
}

std::optional<int64_t> offsetByLosses(const Trace& baseline, const Trace& measured, double tolerance) {
  std::vector<std::pair<int64_t, double>> base;
  std::map<int64_t, double> rerun;
  for (const Scalar& s : baseline.scalars)
    if (s.name == "loss") base.push_back({s.step, s.value});
  for (const Scalar& s : measured.scalars)
    if (s.name == "loss") rerun.emplace(s.step, s.value);  // a step's first loss
  if (base.empty() || rerun.empty()) return std::nullopt;
  auto same = [&](double a, double b) { return std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(a)); };
  for (int64_t offset = 0; offset <= rerun.rbegin()->first; ++offset) {
    bool all = std::all_of(base.begin(), base.end(), [&](const std::pair<int64_t, double>& l) {
      auto it = rerun.find(l.first + offset);
      return it != rerun.end() && same(l.second, it->second);
    });
    if (all) return offset;
  }
  return std::nullopt;
}

void shiftSteps(Trace& baseline, int64_t offset) {
  for (Step& s : baseline.steps) s.index += offset;
  for (Scalar& s : baseline.scalars)
    if (s.step >= 0) s.step += offset;
  for (Allocation& a : baseline.allocations)
    if (a.step >= 0) a.step += offset;
}

std::optional<ComparedPeak> comparedPeak(const Trace& baseline, const Trace& measured) {
  if (baseline.steps.empty()) return std::nullopt;
  int64_t first = baseline.steps.front().index, last = baseline.steps.back().index;
  MemoryCurve base_curve = memoryCurve(baseline), rerun_curve = memoryCurve(measured);
  std::vector<StepPeak> base_steps = stepPeaks(baseline, base_curve);
  std::vector<StepPeak> rerun_steps = stepPeaks(measured, rerun_curve);
  ComparedPeak c;
  c.rerun_peak = rerun_curve.peak;
  // The two levels are read entering the last step: the first may still
  // hold what attach itself kept alive for a moment (the baseline's report
  // of live tensors), freed within it, and the two runs differ there by
  // more than the heap the attached trace lacks.
  c.baseline_entering = base_steps.back().live_at_start;
  bool found = false;
  Bytes window = 0;
  for (const StepPeak& s : rerun_steps) {
    if (s.step < first || s.step > last) continue;
    if (s.step == last && !found) {
      c.rerun_entering = s.live_at_start;
      found = true;
    }
    window = std::max(window, s.peak);
  }
  if (!found) return std::nullopt;
  // The baseline's own peak may lie before its first step (at attach) or
  // between steps; the re-run's is taken over the same steps only.
  c.peak = sat::add(sat::sub(window, c.rerun_entering), c.baseline_entering);
  return c;
}

std::string alignAttached(Trace& baseline, const Trace& measured, const AttachedBaseline& a) {
  std::string said = "the baseline was recorded by `gcprof attach`";
  if (a.numbered_by_job)
    return said + " from the job's step " + std::to_string(a.first_step) +
           "; its steps are paired with the re-run's by the job's step numbers";
  std::optional<int64_t> offset = offsetByLosses(baseline, measured, lossTolerance(measured.run.backend));
  said += "; the job keeps no step count (no optimizer state \"step\"), so its steps count from attach";
  if (!offset)
    return said + ", and no step of the re-run begins the attached run's losses: steps compared as counted "
                  "from attach";
  shiftSteps(baseline, *offset);
  return said + "; they are paired with the re-run's steps from " + std::to_string(*offset) +
         ", where its losses begin the attached run's (so the loss gate shows that they occur in the "
         "re-run in order, not at which step)";
}

void judgeAttached(Verification& v, const PlanFile& plan, const Trace& baseline, const Trace& measured,
                   const std::string& how) {
  v.attached = how;
  std::optional<ComparedPeak> c = comparedPeak(baseline, measured);
  if (!c) {
    v.attached += "; the re-run lacks the baseline's steps, so its peak is its own, from its start, and "
                  "includes memory the attached recording never saw";
    return;
  }
  v.attached += "; peak compared over steps " + std::to_string(baseline.steps.front().index) + ".." +
                std::to_string(baseline.steps.back().index) + ": the re-run's " + formatBytes(c->rerun_peak) +
                " from its start, " + formatBytes(c->rerun_entering) + " live entering step " +
                std::to_string(baseline.steps.back().index) + " against the attached run's " +
                formatBytes(c->baseline_entering);
  judgePeakAgain(v, plan, c->peak, " (the re-run on the attached steps)");
}

}  // namespace gcprof::advisor
