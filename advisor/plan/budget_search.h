// The search for the least-recompute plan that fits a budget, solved on a
// unit chain and judged by the replay simulator: the chain is a bound that
// over-prices some plans, so its answers are re-checked and the search is
// relaxed by the chain's measured excess (docs/plan.md, "Relaxed to the
// simulator").
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "plan/advice.h"

namespace gcprof::advisor {

// Maps a plan solved on one chain onto the chain `Advice::chain` simulates
// (identity, or whole blocks onto the module tree).
using PlanLift = std::function<Segments(const Segments&)>;

// The plan's recompute stays within --max-slowdown (always, without one).
bool withinSlowdown(const Advice& a, const PlanOutcome& o);

// The least-recompute plan on `chain` that the simulator fits, named `name`;
// empty when none does. `exact` is cleared when a search was thinned.
std::optional<PlanOutcome> solveThenSimulate(const Trace& trace, const Advice& a, const UnitChain& chain,
                                             const SolverOptions& opts, const std::string& name,
                                             const PlanLift& lift, bool& exact);

// The optimal answer on a's own chain at a's budget, never worse than a
// budget-blind plan (none, every, uniform, whole blocks) that fits.
// `fixed_plans` collects those plans into `a`; it is called once the
// search needs them, so that their simulations run meanwhile.
std::optional<PlanOutcome> optimalWithinBudget(const Trace& trace, Advice& a, const SolverOptions& opts,
                                               const std::function<void()>& fixed_plans);

}  // namespace gcprof::advisor
