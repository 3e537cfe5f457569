// The simulations of one advice, by plan: its searches (the solver re-run at
// relaxed budgets, the budget-blind plans, the minimum) often land on a plan
// already simulated, and on a long run each simulation walks every step.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "simulate/replay_simulator.h"

namespace gcprof::advisor {

class SimulationMemo {
 public:
  SimulationMemo() = default;
  // A copy starts empty: the advice copied may change its layout or filter
  // (finer units), and what was simulated for the original says nothing of it.
  SimulationMemo(const SimulationMemo&) {}
  SimulationMemo& operator=(const SimulationMemo&) {
    clear();
    return *this;
  }

  // simulate(trace, filter, layout, plan, options), remembered by plan and
  // the options that change the result. The caller keeps trace, filter and
  // layout those of the first call (or clear()s the memo when they change).
  // Safe from several threads; two threads asking the same plan at once may
  // both simulate it. A simulation asked to stop (options.stop_above) is
  // answered by the whole one where that was made.
  Simulation simulate(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                      const Segments& plan, const SimulationOptions& options);
  void clear();

 private:
  using Key = std::tuple<std::vector<std::tuple<int, int, int, std::vector<std::string>>>, bool, size_t,
                         const AllocatorSettings*, Bytes>;
  std::mutex mutex_;
  std::map<Key, Simulation> done_;
  std::shared_ptr<const PlanContext> context_;  // made at the first simulation
};

}  // namespace gcprof::advisor
