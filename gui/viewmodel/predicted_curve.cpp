#include "predicted_curve.h"

#include <map>

#include "model/memory_curve.h"
#include "model/module_tree.h"
#include "model/recording_cost.h"
#include "model/step_layout.h"
#include "simulate/replay_simulator.h"

namespace gcprof::view {

std::optional<PredictedCurve> predictedCurve(const Trace& trace, const PlanView& plan, std::string* why) {
  try {
    std::map<std::string, int> index;
    for (size_t i = 0; i < plan.units.size(); ++i) index[plan.units[i]] = static_cast<int>(i);
    advisor::Segments segments;
    // A module-tree plan names parents in `checkpoint`; its segments' units
    // are the chain spans the simulator replays.
    const auto& spans = plan.segment_units.size() == plan.checkpoint.size() && !plan.segment_units.empty()
                            ? plan.segment_units
                            : plan.checkpoint;
    for (size_t si = 0; si < spans.size(); ++si) {
      const auto& seg = spans[si];
      if (seg.empty()) continue;
      auto first = index.find(seg.front()), last = index.find(seg.back());
      if (first == index.end() || last == index.end()) {
        *why = "the plan checkpoints " + seg.front() + ", which is not one of its units";
        return std::nullopt;
      }
      // Selective: the simulator reads only the save-list (docs/plan.md).
      bool selective = si < plan.save.size() && !plan.save[si].empty();
      segments.push_back({first->second, last->second, selective ? 1 : 0,
                          selective ? plan.save[si] : std::vector<std::string>{}});
    }
    // As advise laid the chain out (a tree plan's blocks widen their sub-modules' windows).
    advisor::RunLayout layout = advisor::treeLayout(trace, advisor::treeOfPlan(plan.units, plan.blocks));
    // Recompute stretches the timeline as `advise` predicted it: without the hooks' cost.
    advisor::subtractRecordingCost(layout, trace, advisor::hookCostPerCall(trace));
    advisor::subtractOperatorCost(layout, trace, advisor::opCostPerCall(trace));
    if (layout.complete == 0) {
      *why = "no complete step to replay the plan on";
      if (!layout.steps.empty() && !layout.steps.front().problem.empty())
        *why += " (" + layout.steps.front().problem + ")";
      return std::nullopt;
    }
    advisor::SimulationOptions options;
    options.want_curve = true;
    advisor::Simulation sim = advisor::simulate(trace, advisor::primaryFilter(trace), layout, segments, options);
    std::vector<std::pair<Ns, Bytes>> points;
    points.reserve(sim.curve.size());
    for (const advisor::MemoryPoint& p : sim.curve) points.emplace_back(p.time, p.live);
    PredictedCurve out{StackedMemory::fromPoints(points), {}};
    for (size_t i = 0; i < sim.step_bounds.size() && i < layout.steps.size(); ++i)
      out.steps.push_back({layout.steps[i].step, sim.step_bounds[i].first, sim.step_bounds[i].second});
    return out;
  } catch (const std::exception& e) {
    *why = std::string("cannot simulate the plan: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace gcprof::view
