#include "predicted_curve.h"

#include "advice_error.h"
#include "plan/plan_simulation.h"

namespace gcprof::view {

std::optional<PredictedCurve> predictedCurve(const Trace& trace, const PlanView& plan, std::string* why) {
  if (!plan.file) {
    *why = plan.error;
    return std::nullopt;
  }
  try {
    advisor::SimulationOptions options;
    options.want_curve = true;
    advisor::PlanSimulation run = advisor::simulatePlan(trace, *plan.file, options);
    std::vector<std::pair<Ns, Bytes>> points;
    points.reserve(run.sim.curve.size());
    for (const advisor::MemoryPoint& p : run.sim.curve) points.emplace_back(p.time, p.live);
    PredictedCurve out{StackedMemory::fromPoints(points), {}};
    for (size_t i = 0; i < run.sim.step_bounds.size() && i < run.layout.steps.size(); ++i)
      out.steps.push_back({run.layout.steps[i].step, run.sim.step_bounds[i].first, run.sim.step_bounds[i].second});
    return out;
  } catch (const advisor::AdviceError& e) {
    *why = e.what();  // says what in the plan or the trace is at fault
    return std::nullopt;
  } catch (const std::exception& e) {
    *why = std::string("cannot simulate the plan: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace gcprof::view
