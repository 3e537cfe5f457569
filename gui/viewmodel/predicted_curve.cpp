#include "predicted_curve.h"

#include <map>

#include "model/memory_curve.h"
#include "model/recording_cost.h"
#include "model/step_layout.h"
#include "simulate/replay_simulator.h"

namespace gcprof::view {

std::optional<PredictedCurve> predictedCurve(const Trace& trace, const PlanView& plan, std::string* why) {
  try {
    std::map<std::string, int> index;
    for (size_t i = 0; i < plan.units.size(); ++i) index[plan.units[i]] = static_cast<int>(i);
    advisor::Segments segments;
    for (const auto& seg : plan.checkpoint) {
      if (seg.empty()) continue;
      auto first = index.find(seg.front()), last = index.find(seg.back());
      if (first == index.end() || last == index.end()) {
        *why = "the plan checkpoints " + seg.front() + ", which is not one of its units";
        return std::nullopt;
      }
      segments.push_back({first->second, last->second});
    }
    advisor::RunLayout layout = advisor::stepLayouts(trace, plan.units);
    // Recompute stretches the timeline as `advise` predicted it: without the hooks' cost.
    advisor::subtractRecordingCost(layout, trace, advisor::hookCostPerCall(trace));
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
