#include "simulate/simulation_memo.h"

#include "simulate/plan_events.h"

namespace gcprof::advisor {

Simulation SimulationMemo::simulate(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                                    const Segments& plan, const SimulationOptions& options) {
  Key key;
  std::shared_ptr<const PlanContext> context;  // held: a clear() meanwhile does not end it
  for (const Segment& s : plan) std::get<0>(key).emplace_back(s.first, s.last, s.option, s.save);
  // options.recorded is the recorded run's events, made here when null: the
  // same simulation either way.
  std::get<1>(key) = options.want_curve;
  std::get<2>(key) = options.max_curve_points;
  std::get<3>(key) = options.allocator;
  std::get<4>(key) = -1;  // whole
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = done_.find(key);
    if (it != done_.end()) return it->second;
    std::get<4>(key) = options.stop_above;
    it = done_.find(key);
    if (it != done_.end()) return it->second;
    if (!context_) context_ = std::make_shared<const PlanContext>(trace, filter, layout);
    context = context_;
  }
  SimulationOptions shared = options;
  shared.context = context.get();
  Simulation sim = gcprof::advisor::simulate(trace, filter, layout, plan, shared);
  if (!sim.stopped) std::get<4>(key) = -1;  // not stopped: the whole simulation
  std::lock_guard<std::mutex> lock(mutex_);
  done_.emplace(std::move(key), sim);
  return sim;
}

void SimulationMemo::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  done_.clear();
  context_.reset();
}

}  // namespace gcprof::advisor
