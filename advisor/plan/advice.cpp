#include "plan/advice.h"

#include <cmath>
#include <functional>
#include <future>
#include <cstdio>

#include "byte_text.h"
#include "model/advice_error.h"
#include "saturating.h"
#include "model/resident_memory.h"
#include "solve/fixed_plans.h"
#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

PlanOutcome measure(const Trace& trace, const Advice& a, const std::string& name,
                    const Segments& segments) {
  PlanOutcome o;
  o.name = name;
  o.segments = segments;
  Simulation sim = simulate(trace, a.filter, a.layout, segments);
  o.peak = sim.peak;
  o.recompute_ns = sim.recompute_ns;
  o.step_ns = sat::add(a.baseline.step_ns, sim.recompute_ns);
  ChainPeak cp = evaluateChain(a.chain, segments);
  o.chain_peak = cp.peak;
  o.peak_where = whereOf(a.chain, cp);
  o.fits = !a.has_budget || o.peak <= a.limit();
  return o;
}

bool withinSlowdown(const Advice& a, const PlanOutcome& o) {
  if (!a.max_slowdown) return true;
  return static_cast<double>(o.recompute_ns) <= *a.max_slowdown * static_cast<double>(a.baseline.step_ns);
}

// The least-recompute plan whose *simulated* peak fits. The chain model is
// an envelope over the steps, so its optimum nearly always fits at once;
// when the simulator disagrees the chain budget is lowered by the excess.
std::optional<PlanOutcome> optimalWithinBudget(const Trace& trace, Advice& a,
                                               const SolverOptions& opts,
                                               const std::function<void()>& fixed_plans) {
  Bytes target = a.limit();
  std::optional<PlanOutcome> best;
  for (int attempt = 0; attempt < 8; ++attempt) {
    Solution s = solveOptimal(a.chain, target, opts);
    a.exact = a.exact && s.exact;
    if (!s.feasible) break;
    PlanOutcome o = measure(trace, a, "optimal", s.segments);
    if (o.fits) {
      best = o;
      break;
    }
    target = sat::sub(target, std::max<Bytes>(1, sat::sub(o.peak, a.limit())));
  }
  // A budget-blind plan that happens to fit with less recompute wins: the
  // answer is never worse than none, every or uniform at the same budget.
  fixed_plans();
  for (const PlanOutcome* fixed : {&a.baseline, &a.every, &a.uniform}) {
    if (!fixed->fits || !withinSlowdown(a, *fixed)) continue;
    if (!best || fixed->recompute_ns < best->recompute_ns) {
      PlanOutcome o = *fixed;
      o.name = "optimal";
      best = o;
    }
  }
  return best;
}

std::string nsText(Ns ns) {
  char buf[48];
  if (ns < 10000000) std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// `--units` for the direct sub-modules of the units, when the units are one
// family ("transformer.h.#" -> "transformer\.h\.[0-9]+\.[^.]+"); "" otherwise.
std::string subModuleSpec(const std::vector<std::string>& units) {
  if (units.empty()) return "";
  std::string pattern = familyPattern(units.front());
  for (const std::string& u : units)
    if (familyPattern(u) != pattern) return "";
  std::string re;
  for (char c : pattern) {
    if (c == '#') re += "[0-9]+";
    else if (std::string(".^$|()[]{}*+?\\").find(c) != std::string::npos) re += std::string("\\") + c;
    else re += c;
  }
  return re + "\\.[^.]+";
}

struct FinerUnits {
  std::string spec;
  Bytes peak = 0;
};

// The least peak the sub-modules of the units reach as units, simulated:
// what choosing finer units would buy. Empty when they cannot be units.
std::optional<FinerUnits> finerUnitsReach(const Trace& trace, const Advice& a) {
  std::string spec = subModuleSpec(a.units.names);
  if (spec.empty()) return std::nullopt;
  try {
    Advice fine = a;
    fine.units = selectUnits(a.modules, spec);
    fine.layout = stepLayouts(trace, fine.units.names);
    fine.chain = buildUnitChain(trace, a.filter, fine.layout, fine.units.names);
    Solution m = minimumPeak(fine.chain, defaultSolverOptions(fine.chain.size(), a.kind));
    return FinerUnits{spec, measure(trace, fine, "finer", m.segments).peak};
  } catch (const AdviceError&) {
    return std::nullopt;  // not a chain: nothing to offer
  }
}

std::string infeasibleMessage(const Trace& trace, Advice& a, const SolverOptions& opts) {
  Solution m = minimumPeak(a.chain, opts);
  PlanOutcome least = measure(trace, a, "minimum", m.segments);
  a.min_reachable_peak = least.peak;
  a.minimum = least;
  std::string budget = formatBytes(a.budget) + (a.budget_text.empty() ? "" : " (" + a.budget_text + ")");
  if (a.headroom.bytes > 0)
    budget += " less " + formatBytes(a.headroom.bytes) + " headroom = " + formatBytes(a.limit());
  if (a.strategy != Strategy::Optimal && least.peak <= a.limit()) {
    return "the " + toString(a.strategy) + " plan peaks at " + formatBytes(a.chosen.peak) +
           ", above the budget " + budget + " (set " + a.chosen.peak_where +
           "); --strategy optimal fits it.";
  }
  std::string msg = "budget " + budget + " cannot be met: the smallest peak any plan reaches is " +
                    formatBytes(least.peak) + " (" + std::to_string(m.segments.size()) +
                    " checkpointed segments, " + nsText(least.recompute_ns) +
                    " recompute per step); recorded peak " + formatBytes(a.baseline.peak) + ".\n";
  msg += "  At that plan the peak is set " + least.peak_where;
  ResidentMemory resident = residentMemory(trace, a.filter, a.layout);
  msg += ".\n  No checkpoint frees what is live when the first unit starts: " +
         formatBytes(resident.total()) + " of the " + formatBytes(a.budget) + " budget (" +
         resident.describe() + ")";
  if (auto finer = finerUnitsReach(trace, a)) {
    msg += ".\n  Finer units, the sub-modules of each unit (--units '" + finer->spec + "'), " +
           (finer->peak < least.peak ? "reach " : "reach no lower: ") + formatBytes(finer->peak);
  }
  msg += ".\n  Raise the budget to at least " + formatBytes(sat::add(least.peak, a.headroom.bytes)) +
         ", or shrink what the units do not hold (batch, optimizer state, precision).";
  return msg;
}

}  // namespace

Bytes Budget::resolve(Bytes recorded_peak) const {
  if (!percent) return bytes;
  return static_cast<Bytes>(std::llround(fraction * static_cast<double>(recorded_peak)));
}

PlanOutcome outcomeOf(const Trace& trace, const Advice& advice, const std::string& name,
                      const Segments& segments) {
  return measure(trace, advice, name, segments);
}

Advice advise(const Trace& trace, const AdviceRequest& req) {
  Advice a;
  a.run = trace.run;
  a.filter = primaryFilter(trace);
  a.modules = moduleStats(trace, a.filter);
  a.units = selectUnits(trace, a.modules, req.units);
  a.excluded = excludeUnsafeUnits(a.units, inPlaceModules(trace));
  a.layout = stepLayouts(trace, a.units.names);
  a.hook_ns_per_call = hookCostPerCall(trace);
  subtractRecordingCost(a.layout, trace, a.hook_ns_per_call);
  a.chain = buildUnitChain(trace, a.filter, a.layout, a.units.names);
  a.kind = req.kind ? *req.kind : segmentKindFor(trace.run.runtime);
  a.strategy = req.strategy;
  a.max_slowdown = req.max_slowdown;
  a.has_budget = req.budget.has_value();
  a.budget = a.has_budget ? req.budget->resolve(a.chain.baseline_peak) : a.chain.baseline_peak;
  if (a.has_budget) a.budget_text = req.budget->text;
  if (a.budget <= 0) throw AdviceError("budget " + a.budget_text + " is not a positive size");
  if (a.has_budget) {
    a.headroom = resolveHeadroom(req.headroom, a.budget,
                                 stepPeakJitter(trace, a.filter, a.chain.steady_step), a.filter.device);
    if (a.headroom.bytes < 0 || a.headroom.bytes >= a.budget)
      throw AdviceError("headroom " + formatBytes(a.headroom.bytes) + " (" + a.headroom.rule +
                        ") leaves nothing of the budget " + formatBytes(a.budget) +
                        "; give a smaller --headroom");
  }
  if (a.strategy == Strategy::Optimal && !a.has_budget && !a.max_slowdown)
    throw AdviceError("optimal needs a target: give --budget (6GiB, 60%) or --max-slowdown (30%)");

  int n = a.chain.size();
  // The recorded run is the empty plan; its numbers need no simulation
  // (the simulator reproduces them exactly, tests/advisor checks that).
  a.baseline.name = "none";
  a.baseline.peak = a.chain.baseline_peak;
  // Step time as `verify` measures it, so that prediction and measurement
  // share one definition; the plan adds its recompute per step.
  a.baseline.step_ns = trace.steps.empty() ? a.chain.step_ns : medianStepNs(trace);
  a.baseline.chain_peak = evaluateChain(a.chain, {}).peak;
  a.baseline.peak_where = whereOf(a.chain, evaluateChain(a.chain, {}));
  a.baseline.fits = !a.has_budget || a.baseline.peak <= a.limit();
  // The budget-blind plans are simulated on other threads while the solver
  // runs: on large traces the simulations dominate the time of `advise`.
  // They only read `a` fields that are final by now.
  const Advice& ready = a;
  Segments every_plan = everyUnit(n), uniform_plan = uniformPlan(n, a.kind);
  auto every = std::async(std::launch::async, [&] { return measure(trace, ready, "every", every_plan); });
  auto uniform = std::async(std::launch::async, [&] { return measure(trace, ready, "uniform", uniform_plan); });
  auto fixedPlans = [&] {
    if (every.valid()) a.every = every.get();
    if (uniform.valid()) a.uniform = uniform.get();
  };

  SolverOptions opts = defaultSolverOptions(n, a.kind);
  if (req.max_segment_units >= 0) opts.max_segment_units = req.max_segment_units;
  // Capping region length restricts the plans searched: say so.
  if (a.kind == SegmentKind::Region && opts.max_segment_units > 0 && opts.max_segment_units < n)
    a.exact = false;
  if (a.strategy != Strategy::Optimal) fixedPlans();
  switch (a.strategy) {
    case Strategy::None: a.chosen = a.baseline; break;
    case Strategy::Every: a.chosen = a.every; break;
    case Strategy::Uniform: a.chosen = a.uniform; break;
    case Strategy::Optimal: {
      if (!a.has_budget) {
        // The dual: the least peak within the allowed recompute time.
        Ns limit = static_cast<Ns>(*a.max_slowdown * static_cast<double>(a.baseline.step_ns));
        Solution s = leastPeakWithin(a.chain, limit, opts);
        a.exact = a.exact && s.exact;
        a.chosen = measure(trace, a, "optimal", s.segments);
        fixedPlans();
      } else if (auto best = optimalWithinBudget(trace, a, opts, fixedPlans)) {
        a.chosen = *best;
      } else {
        // The chain model is an upper bound; the least-peak plan may still
        // fit on the simulator, which has the last word.
        fixedPlans();
        // This fallback searches no less than the main one: `exact` keeps
        // saying only whether a front was thinned (it printed "search
        // thinned" for 8-unit chains before, issue 15).
        Solution m = minimumPeak(a.chain, opts);
        a.chosen = measure(trace, a, "optimal", m.segments);
      }
      break;
    }
  }
  a.chosen.name = toString(a.strategy);
  a.feasible = a.chosen.fits && withinSlowdown(a, a.chosen);
  if (!a.chosen.fits) {
    a.message = infeasibleMessage(trace, a, opts);
    if (a.strategy == Strategy::Optimal) {
      a.chosen = a.minimum;
      a.chosen.name = "optimal";
      a.chosen.fits = false;
    }
  } else if (!a.feasible) {
    a.message = "the plan recomputes " + nsText(a.chosen.recompute_ns) +
                " per step, more than --max-slowdown allows (" +
                std::to_string(static_cast<int>(std::lround(*a.max_slowdown * 100))) + "% of " +
                nsText(a.baseline.step_ns) + "); raise the budget or the allowed slowdown.";
  }
  return a;
}

}  // namespace gcprof::advisor
