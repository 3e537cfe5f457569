#include "plan/budget_search.h"

#include <algorithm>

#include "saturating.h"

namespace gcprof::advisor {
namespace {

// A plan found on a chain with what the simulator says of it.
struct Candidate {
  std::optional<PlanOutcome> best;  // the least recompute the simulator fits so far
  Ns best_chain_ns = 0;              // its recompute on the chain searched
  Bytes excess = 0;                  // the chain's peak over the simulator's, on the first plan simulated
};

// The least-recompute plan on `chain` whose *simulated* peak (on a's chain,
// after `lift` maps the plan onto it) fits. The chain model is an envelope
// over the steps, so its optimum nearly always fits at once; when the
// simulator disagrees the chain budget is lowered by the excess.
Candidate solveAtLimit(const Trace& trace, const Advice& a, const UnitChain& chain, const SolverOptions& opts,
                       const std::string& name, const PlanLift& lift,
                       bool& exact) {
  Candidate c;
  Bytes target = a.limit();
  for (int attempt = 0; attempt < 8; ++attempt) {
    Solution s = solveOptimal(chain, target, opts);
    exact = exact && s.exact;
    // Nothing fits the chain: the plan of its smallest peak may still fit
    // the simulator, and says by how much the chain over-prices.
    if (!s.feasible && attempt == 0) s = minimumPeak(chain, opts);
    if (!s.feasible) break;
    PlanOutcome o = outcomeOf(trace, a, name, lift(s.segments));
    if (attempt == 0) c.excess = sat::sub(o.chain_peak, o.peak);
    if (o.fits) {
      c.best = o;
      c.best_chain_ns = s.recompute_ns;
      break;
    }
    // The chain counts allocated bytes: a plan over the limit in reserved
    // bytes lowers the chain's target by as much.
    target = sat::sub(target, std::max<Bytes>(1, sat::sub(a.budgeted(o), a.limit())));
  }
  return c;
}

// The chain prices each quantity at its worst step and each drop at its
// smallest (unit_chain.h): when the steps differ, a plan may simulate below
// its chain peak, and the solver's answer at the limit misses cheaper plans
// the simulator fits (on the GPT sample the chain prices `every`
// 267 KiB above the simulator). So the search is re-run at the limit plus
// the chain's excess over the simulator, doubled while the answer fits,
// then bisected between the largest relaxation whose answer fitted and the
// smallest whose answer did not; a candidate is kept only when the
// simulator fits it with less recompute. Never worse than the answer at the
// limit; not exact: an answer that does not fit hides an equally cheap one
// that would (docs/plan.md, "Relaxed to the simulator").
constexpr int kRelaxedSolves = 10;
constexpr Bytes kRelaxedResolution = 4096;  // the bisection stops within this many bytes

void relaxToSimulator(const Trace& trace, const Advice& a, const UnitChain& chain, const SolverOptions& opts,
                      const std::string& name, const PlanLift& lift,
                      Bytes excess, Candidate& c, bool& exact) {
  if (excess <= 0) return;
  Bytes fitted = 0, failed = -1;  // relaxations whose answers the simulator fitted / did not
  for (int i = 0; i < kRelaxedSolves; ++i) {
    if (failed >= 0 && failed - fitted <= kRelaxedResolution) break;
    Bytes r = failed >= 0 ? fitted + (failed - fitted) / 2 : (i == 0 ? excess : sat::add(fitted, fitted));
    Solution s = solveOptimal(chain, sat::add(a.limit(), r), opts);
    exact = exact && s.exact;
    if (!s.feasible || (c.best && s.recompute_ns >= c.best_chain_ns)) {
      fitted = r;  // nothing cheaper within r: look further
      continue;
    }
    std::optional<PlanOutcome> o = outcomeIfFits(trace, a, name, lift(s.segments));
    if (!o) {
      failed = r;
      continue;
    }
    fitted = r;
    if (!c.best || o->recompute_ns < c.best->recompute_ns) {
      c.best = o;
      c.best_chain_ns = s.recompute_ns;
    }
  }
}

}  // namespace

bool withinSlowdown(const Advice& a, const PlanOutcome& o) {
  if (!a.max_slowdown) return true;
  return static_cast<double>(o.recompute_ns) <= *a.max_slowdown * static_cast<double>(a.baseline.step_ns);
}

std::optional<PlanOutcome> solveThenSimulate(const Trace& trace, const Advice& a, const UnitChain& chain,
                                             const SolverOptions& opts, const std::string& name,
                                             const PlanLift& lift,
                                             bool& exact) {
  Candidate c = solveAtLimit(trace, a, chain, opts, name, lift, exact);
  relaxToSimulator(trace, a, chain, opts, name, lift, c.excess, c, exact);
  return c.best;
}

std::optional<PlanOutcome> optimalWithinBudget(const Trace& trace, Advice& a,
                                               const SolverOptions& opts,
                                               const std::function<void()>& fixed_plans) {
  auto same = [](const Segments& s) { return s; };
  Candidate c = solveAtLimit(trace, a, a.chain, opts, "optimal", same, a.exact);
  // The fixed plans were simulated meanwhile: `every`'s excess is the
  // chain's over-pricing of a plan that checkpoints every unit.
  fixed_plans();
  Bytes excess = c.excess;
  for (const PlanOutcome* fixed : {&a.every, &a.uniform})
    if (!fixed->segments.empty()) excess = std::max(excess, sat::sub(fixed->chain_peak, fixed->peak));
  relaxToSimulator(trace, a, a.chain, opts, "optimal", same, excess, c, a.exact);
  std::optional<PlanOutcome> best = c.best;
  // A budget-blind plan that happens to fit with less recompute wins: the
  // answer is never worse than none, every or uniform at the same budget,
  // nor, for a plan over the module tree, than the best plan of whole blocks.
  fixed_plans();
  std::vector<const PlanOutcome*> others = {&a.baseline, &a.every, &a.uniform};
  if (a.blocks) others.push_back(&*a.blocks);
  for (const PlanOutcome* fixed : others) {
    if (!fixed->fits || !withinSlowdown(a, *fixed)) continue;
    if (!best || fixed->recompute_ns < best->recompute_ns) {
      PlanOutcome o = *fixed;
      o.name = "optimal";
      best = o;
    }
  }
  return best;
}

}  // namespace gcprof::advisor
