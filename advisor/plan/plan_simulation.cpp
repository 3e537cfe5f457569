#include "plan/plan_simulation.h"

#include <map>

#include "advice_error.h"
#include "memory/memory_curve.h"
#include "chain/module_tree.h"
#include "chain/recording_cost.h"

namespace gcprof::advisor {
namespace {

Segments segmentsOf(const PlanFile& plan) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < plan.units.size(); ++i) index[plan.units[i]] = static_cast<int>(i);
  Segments segments;
  for (size_t i = 0; i < plan.segment_units.size(); ++i) {
    const std::vector<std::string>& span = plan.segment_units[i];
    if (span.empty()) continue;
    auto first = index.find(span.front()), last = index.find(span.back());
    if (first == index.end() || last == index.end())
      throw AdviceError("the plan checkpoints " + (first == index.end() ? span.front() : span.back()) +
                        ", which is not one of its units");
    // A selective segment: the simulator reads only its save-list (the
    // option's index into a chain's candidates is the advisor's, not needed).
    bool selective = plan.policy[i] == "selective";
    segments.push_back({first->second, last->second, selective ? 1 : 0,
                        selective ? plan.save[i] : std::vector<std::string>{}});
  }
  return segments;
}

}  // namespace

PlanSimulation simulatePlan(const Trace& trace, const PlanFile& plan, const SimulationOptions& options) {
  PlanSimulation out;
  out.segments = segmentsOf(plan);
  out.layout = treeLayout(trace, treeOfPlan(plan.units, plan.blocks));
  // Recompute stretches the timeline as advise predicted it: without the hooks' cost.
  subtractRecordingCost(out.layout, trace, recordingCost(trace));
  if (out.layout.complete == 0) {
    std::string why = "no complete step to replay the plan on";
    if (!out.layout.steps.empty() && !out.layout.steps.front().problem.empty())
      why += " (" + out.layout.steps.front().problem + ")";
    throw AdviceError(why);
  }
  out.sim = simulate(trace, primaryFilter(trace), out.layout, out.segments, options);
  return out;
}

}  // namespace gcprof::advisor
