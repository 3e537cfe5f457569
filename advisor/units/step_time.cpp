#include "units/step_time.h"

#include "median.h"
#include "saturating.h"
#include "units/step_layout.h"

namespace gcprof::advisor {

Ns medianStepNs(const Trace& run) {
  std::vector<Ns> d;
  for (const Step& s : run.steps) d.push_back(sat::sub(s.end, s.start));
  if (d.size() >= 3) d.erase(d.begin());
  if (d.empty()) return run.run.ended > run.run.started ? sat::sub(run.run.ended, run.run.started) : 0;
  return median(std::move(d));
}

StepTime stepTime(const Trace& run, const std::vector<std::string>& units) {
  if (!run.steps.empty()) return {medianStepNs(run), run.steps.size(), false};
  RunLayout layout = stepLayouts(run, units);
  std::vector<Ns> d;
  for (size_t i : layout.steady) d.push_back(sat::sub(layout.steps[i].end, layout.steps[i].start));
  if (d.empty()) return {medianStepNs(run), 0, false};
  return {median(std::move(d)), layout.complete, true};
}

}  // namespace gcprof::advisor
