#include "plan/infeasible_message.h"

#include <cmath>

#include "byte_text.h"
#include "advice_error.h"
#include "units/outside_units.h"
#include "units/resident_memory.h"

namespace gcprof::advisor {
namespace {

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
    fine.chain = buildUnitChain(trace, a.filter, fine.layout, fine.units.names, a.recorded.get(), false);
    Solution m = minimumPeak(fine.chain, defaultSolverOptions(fine.chain.size(), a.kind));
    return FinerUnits{spec, outcomeOf(trace, fine, "finer", m.segments).peak};
  } catch (const AdviceError&) {
    return std::nullopt;  // not a chain: nothing to offer
  }
}

}  // namespace

std::string infeasibleMessage(const Trace& trace, Advice& a, const SolverOptions& opts) {
  Solution m = minimumPeak(a.chain, opts);
  PlanOutcome least = outcomeOf(trace, a, "minimum", m.segments);
  a.min_reachable_peak = a.budgeted(least);
  a.minimum = least;
  std::string budget = formatBytes(a.budget) + (a.budget_text.empty() ? "" : " (" + a.budget_text + ")");
  if (a.headroom.bytes > 0)
    budget += " less " + formatBytes(a.headroom.bytes) + " headroom = " + formatBytes(a.limit());
  // The strategy's own plan does not change with the budget; optimal's
  // answer fits from the least peak on (its fallback is that very plan).
  auto leastBudget = [&](Bytes peak) {
    return leastBudgetFor(peak, a.headroom_request, a.headroom.margins);
  };
  Bytes least_optimal = leastBudget(a.budgeted(least));
  a.least_budget = a.strategy == Strategy::Optimal ? least_optimal : leastBudget(a.budgeted(a.chosen));
  if (a.strategy != Strategy::Optimal && a.budgeted(least) <= a.limit()) {
    return "the " + toString(a.strategy) + " plan peaks at " + formatBytes(a.budgeted(a.chosen)) +
           ", above the budget " + budget + " (set " + a.chosen.peak_where +
           "); --strategy optimal fits it" +
           (a.least_budget > 0 ? ", and the " + toString(a.strategy) + " plan fits a budget of at least " +
                                     formatBytes(a.least_budget)
                               : "") +
           ".";
  }
  std::string of = a.memory.measure == MemoryMeasure::Reserved ? " of reserved memory" : "";
  std::string msg = "budget " + budget + " cannot be met: the smallest peak any plan reaches is " +
                    formatBytes(a.budgeted(least)) + of + " (" + std::to_string(m.segments.size()) +
                    " checkpointed segments, " + formatNs(least.recompute_ns) +
                    " recompute per step); recorded peak " + formatBytes(a.budgeted(a.baseline)) + of + ".\n";
  msg += "  At that plan the peak is set " + least.peak_where;
  ResidentMemory resident = residentMemory(trace, a.filter, a.layout);
  msg += ".\n  No checkpoint frees what is live when the first unit starts: " +
         formatBytes(resident.total()) + " of the " + formatBytes(a.budget) + " budget (" +
         resident.describe() + ")";
  SimulationOptions options;
  options.recorded = a.recorded.get();
  Simulation at_least = a.simulations.simulate(trace, a.filter, a.layout, m.segments, options);
  if (at_least.peak_replay_offset < 0) {  // recorded events set it: name who made them
    std::vector<std::string> units = a.units.names;
    units.insert(units.end(), a.chain.names.begin(), a.chain.names.end());
    OutsideUnits outside = outsideUnits(trace, a.filter, a.layout, units, at_least.peak_at);
    if (outside.total >= least.peak / 20)  // a part worth naming (5% of the peak)
      msg += ".\n  Nor what modules that are not units made in the step and hold at that peak: " +
             formatBytes(outside.total) + " (" + outside.describe() + ")";
  }
  if (auto finer = finerUnitsReach(trace, a)) {
    msg += ".\n  Finer units, the sub-modules of each unit (--units '" + finer->spec + "'), " +
           (finer->peak < least.peak ? "reach " : "reach no lower: ") + formatBytes(finer->peak);
  }
  if (a.least_budget > 0) {
    msg += ".\n  Raise the budget to at least " + formatBytes(a.least_budget);
    if (a.strategy != Strategy::Optimal && a.least_budget != least_optimal)
      msg += " for the " + toString(a.strategy) + " plan (" + formatBytes(least_optimal) +
             " with --strategy optimal)";
    msg += " (its headroom included)";
  } else {
    msg += ".\n  Raise the budget";  // past any size a budget is written in
  }
  msg += ", or shrink what the units do not hold (batch, optimizer state, precision).";
  return msg;
}

std::string slowdownMessage(const Advice& a) {
  return "the plan recomputes " + formatNs(a.chosen.recompute_ns) +
         " per step, more than --max-slowdown allows (" +
         std::to_string(static_cast<int>(std::lround(*a.max_slowdown * 100))) + "% of " +
         formatNs(a.baseline.step_ns) + "); raise the budget or the allowed slowdown.";
}

}  // namespace gcprof::advisor
