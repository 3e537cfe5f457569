#include "plan/advice.h"

#include <cmath>
#include <functional>
#include <future>
#include <cstdio>

#include "byte_text.h"
#include "advice_error.h"
#include "saturating.h"
#include "units/outside_units.h"
#include "units/resident_memory.h"
#include "simulate/peak_moment.h"
#include "solve/fixed_plans.h"
#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

PlanOutcome measure(const Trace& trace, const Advice& a, const std::string& name,
                    const Segments& segments) {
  PlanOutcome o;
  o.name = name;
  o.segments = segments;
  SimulationOptions options;
  options.recorded = a.recorded.get();
  if (a.memory.reserved_modelled) options.allocator = &a.memory.allocator;
  Simulation sim = a.simulations.simulate(trace, a.filter, a.layout, segments, options);
  o.peak = sim.peak;
  if (a.memory.reserved_modelled) o.reserved_peak = sim.reserved_peak;
  o.recompute_ns = sim.recompute_ns;
  o.step_ns = sat::add(a.baseline.step_ns, sim.recompute_ns);
  o.chain_peak = evaluateChain(a.chain, segments).peak;
  o.peak_where = peakMoment(a.layout, segments, sim).describe(a.chain.names);
  o.fits = !a.has_budget || a.budgeted(o) <= a.limit();
  return o;
}

// Every unit, with its "matmuls" save-list where it has one (strategy.h).
Segments matmulPlan(const UnitChain& c) {
  Segments plan = everyUnit(c.size());
  for (Segment& s : plan) {
    if (s.first >= static_cast<int>(c.selective.size())) continue;
    const std::vector<SelectiveOption>& options = c.selective[s.first];
    for (size_t o = 0; o < options.size(); ++o)
      if (options[o].label == "matmuls") s = {s.first, s.last, static_cast<int>(o) + 1, options[o].save};
  }
  return plan;
}

bool withinSlowdown(const Advice& a, const PlanOutcome& o) {
  if (!a.max_slowdown) return true;
  return static_cast<double>(o.recompute_ns) <= *a.max_slowdown * static_cast<double>(a.baseline.step_ns);
}

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
                       const std::string& name, const std::function<Segments(const Segments&)>& lift,
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
    PlanOutcome o = measure(trace, a, name, lift(s.segments));
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
                      const std::string& name, const std::function<Segments(const Segments&)>& lift,
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
    PlanOutcome o = measure(trace, a, name, lift(s.segments));
    if (!o.fits) {
      failed = r;
      continue;
    }
    fitted = r;
    if (!c.best || o.recompute_ns < c.best->recompute_ns) {
      c.best = o;
      c.best_chain_ns = s.recompute_ns;
    }
  }
}

std::optional<PlanOutcome> solveThenSimulate(const Trace& trace, const Advice& a, const UnitChain& chain,
                                             const SolverOptions& opts, const std::string& name,
                                             const std::function<Segments(const Segments&)>& lift,
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
    fine.chain = buildUnitChain(trace, a.filter, fine.layout, fine.units.names, a.recorded.get(), false);
    Solution m = minimumPeak(fine.chain, defaultSolverOptions(fine.chain.size(), a.kind));
    return FinerUnits{spec, measure(trace, fine, "finer", m.segments).peak};
  } catch (const AdviceError&) {
    return std::nullopt;  // not a chain: nothing to offer
  }
}

std::string infeasibleMessage(const Trace& trace, Advice& a, const SolverOptions& opts) {
  Solution m = minimumPeak(a.chain, opts);
  PlanOutcome least = measure(trace, a, "minimum", m.segments);
  a.min_reachable_peak = a.budgeted(least);
  a.minimum = least;
  std::string budget = formatBytes(a.budget) + (a.budget_text.empty() ? "" : " (" + a.budget_text + ")");
  if (a.headroom.bytes > 0)
    budget += " less " + formatBytes(a.headroom.bytes) + " headroom = " + formatBytes(a.limit());
  // The strategy's own plan does not change with the budget; optimal's
  // answer fits from the least peak on (its fallback is that very plan).
  auto leastBudget = [&](Bytes peak) {
    return leastBudgetFor(peak, a.headroom_request, a.headroom.jitter, a.filter.device);
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
                    " checkpointed segments, " + nsText(least.recompute_ns) +
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

// The tree chain (blocks split into their sub-modules) in place of the
// block chain, when the run allows it: the sub-modules must make complete
// steps where the blocks do. `block_chain` receives the block-level chain
// (the best whole-block plan is solved on it). False (and `a` unchanged)
// otherwise.
// Why not: `a.tree_note`, which advise prints (BERT's blocks were never
// split and nothing said why).
bool planOverTree(const Trace& trace, Advice& a, UnitChain& block_chain, bool moments) {
  ModuleTree tree = moduleTree(a.modules, a.units.names, unsafeModules(trace));
  if (!tree.anySplit()) {
    a.tree_note = "no block has two direct sub-modules to checkpoint one by one (each with a backward, "
                  "called once per call of its block, not changing its input in place)";
    return false;
  }
  // a.layout is the blocks' (its windows are as recorded; only times were adjusted).
  RunLayout fine = stepLayouts(trace, tree.names);
  if (fine.complete != a.layout.complete) {
    std::string why;
    for (const StepLayout& s : fine.steps)
      if (!s.complete && why.empty()) why = "step " + std::to_string(s.step) + ": " + s.problem;
    a.tree_note = "the blocks' sub-modules (" + tree.names.front() + ", ...) do not run one after "
                  "another in forward and backward as the blocks do" + (why.empty() ? "" : " (" + why + ")");
    return false;
  }
  if (!widenToBlocks(fine, a.layout, tree)) {
    a.tree_note = "the steps of the blocks' sub-modules do not line up with the blocks'";
    return false;
  }
  subtractRecordingCost(fine, trace, a.recording_cost);
  UnitChain chain;
  try {
    chain = buildUnitChain(trace, a.filter, fine, tree.names, a.recorded.get(), moments);
  } catch (const AdviceError& e) {
    a.tree_note = std::string("the blocks' sub-modules make no chain: ") + e.what();
    return false;  // the blocks still make a chain: plan over them
  }
  block_chain = std::move(a.chain);
  a.layout = std::move(fine);
  a.chain = std::move(chain);
  a.tree = std::move(tree);
  a.tree_plan = true;
  return true;
}

}  // namespace

Budget Budget::share(double fraction) {
  Budget b;
  b.percent = true;
  b.fraction = fraction;
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", fraction * 100);
  b.text = text;
  return b;
}

Budget Budget::size(Bytes bytes) {
  Budget b;
  b.bytes = bytes;
  b.text = formatBytes(bytes);
  return b;
}

Bytes Budget::resolve(Bytes recorded_peak) const {
  if (!percent) return bytes;
  return static_cast<Bytes>(std::llround(fraction * static_cast<double>(recorded_peak)));
}

int checkpointedModules(const PlanOutcome& plan, const Advice& advice) {
  if (advice.kind == SegmentKind::Module) return static_cast<int>(plan.segments.size());
  int n = 0;
  for (const Segment& s : plan.segments) n += s.last - s.first + 1;
  return n;
}

PlanOutcome outcomeOf(const Trace& trace, const Advice& advice, const std::string& name,
                      const Segments& segments) {
  return measure(trace, advice, name, segments);
}

Advice advise(const Trace& trace, const AdviceRequest& req) {
  Advice a;
  a.run = trace.run;
  refuseRetainedGraphs(trace);
  a.filter = primaryFilter(trace);
  a.recorded = std::make_shared<const RecordedEvents>(trace.allocations, a.filter);
  a.modules = moduleStats(trace, a.filter);
  a.units = selectUnits(trace, a.modules, req.units);
  std::vector<std::string> stage_names = a.units.stage_names;
  a.excluded = excludeUnsafeUnits(a.units, unsafeModules(trace));
  a.layout = stepLayouts(trace, a.units.names);
  if (a.layout.complete == 0 && !stage_names.empty()) {
    // The blocks are not a chain (their backward ranges nest), but the
    // stages they were found in may be (unit_selection.h).
    std::string why = a.layout.steps.empty() ? "no steps" : a.layout.steps.front().problem;
    UnitSelection stages;
    stages.names = stage_names;
    stages.rule = a.units.stage_rule + " (its blocks are not in chain order: " + why + ")";
    try {
      std::vector<ExcludedUnit> excluded = excludeUnsafeUnits(stages, unsafeModules(trace));
      RunLayout layout = stepLayouts(trace, stages.names);
      if (layout.complete > 0) {
        a.units = std::move(stages);
        a.excluded = std::move(excluded);
        a.layout = std::move(layout);
      }
    } catch (const AdviceError&) {
      // No stage is safe to checkpoint: the blocks' refusal stands.
    }
  }
  for (const std::string& name : forwardOnlyBlocks(a.modules, a.units.names))
    a.excluded.push_back({name, "runs no backward (frozen, and nothing trainable below it): it keeps "
                                "no activations for a backward, so there is nothing to drop"});
  a.recording_cost = recordingCost(trace);
  subtractRecordingCost(a.layout, trace, a.recording_cost);
  a.chain = buildUnitChain(trace, a.filter, a.layout, a.units.names, a.recorded.get(), req.moments);
  a.kind = req.kind ? *req.kind : segmentKindFor(trace.run.runtime);
  a.tree = flatTree(a.units.names);
  UnitChain block_chain;
  if (req.tree && req.units == "auto" && a.kind == SegmentKind::Module &&
      segmentKindFor(trace.run.runtime) == SegmentKind::Module)
    planOverTree(trace, a, block_chain, req.moments);
  // Selective checkpoints are applied by the python runtime, one module each
  // (over the module tree: the sub-modules').
  if (a.kind == SegmentKind::Module && req.selective) addSelectiveOptions(a.chain, trace, a.filter, a.layout, a.recorded.get());
  a.strategy = req.strategy;
  a.max_slowdown = req.max_slowdown;
  a.memory = chooseMemory(trace, a.filter, req.memory);
  // The recorded run is the empty plan; its allocated numbers need no
  // simulation (the simulator reproduces them exactly, tests/advisor checks
  // that); its reserved peak is the allocator model's.
  a.baseline.peak = a.chain.baseline_peak;
  if (a.memory.reserved_modelled) {
    SimulationOptions options;
    options.allocator = &a.memory.allocator;
    a.baseline.reserved_peak = simulate(trace, a.filter, a.layout, {}, options).reserved_peak;
  }
  a.has_budget = req.budget.has_value();
  a.budget = a.has_budget ? req.budget->resolve(a.budgeted(a.baseline)) : a.budgeted(a.baseline);
  if (a.has_budget) a.budget_text = req.budget->text;
  if (a.budget <= 0) throw AdviceError("budget " + a.budget_text + " is not a positive size");
  a.headroom_request = req.headroom;
  if (a.has_budget) {
    a.headroom = resolveHeadroom(req.headroom, a.budget,
                                 stepPeakJitter(trace, a.filter, a.chain.steady_step, a.recorded.get()), a.filter.device);
    if (a.headroom.bytes < 0 || a.headroom.bytes >= a.budget)
      throw AdviceError("headroom " + formatBytes(a.headroom.bytes) + " (" + a.headroom.rule +
                        ") leaves nothing of the budget " + formatBytes(a.budget) +
                        "; give a smaller --headroom");
  }
  if (a.strategy == Strategy::Optimal && !a.has_budget && !a.max_slowdown)
    throw AdviceError("optimal needs a target: give --budget (6GiB, 60%) or --max-slowdown (30%)");

  int n = a.chain.size();
  a.baseline.name = "none";
  // Step time as `verify` measures it, so that prediction and measurement
  // share one definition; the plan adds its recompute per step.
  a.baseline.step_ns = trace.steps.empty() ? a.chain.step_ns : medianStepNs(trace);
  a.baseline.chain_peak = evaluateChain(a.chain, {}).peak;
  a.baseline.fits = !a.has_budget || a.budgeted(a.baseline) <= a.limit();
  // The budget-blind plans are simulated on other threads while the solver
  // runs: on large traces the simulations dominate the time of `advise`.
  // They only read `a` fields that are final by now.
  const Advice& ready = a;
  // Over the module tree, `every` and `uniform` stay plans of whole blocks
  // (the common practice they stand for).
  int blocks = a.tree.blocks.empty() ? n : static_cast<int>(a.tree.blocks.size());
  Segments every_plan = a.tree.fromBlockPlan(everyUnit(blocks)),
           uniform_plan = a.tree_plan ? a.tree.fromBlockPlan(uniformPlan(blocks, SegmentKind::Module))
                                      : uniformPlan(n, a.kind);
  auto every = std::async(std::launch::async, [&] { return measure(trace, ready, "every", every_plan); });
  auto uniform = std::async(std::launch::async, [&] { return measure(trace, ready, "uniform", uniform_plan); });
  // The recorded run's peak moment, from the simulator like every plan's.
  auto recorded = std::async(std::launch::async, [&] {
    SimulationOptions options;
    options.recorded = ready.recorded.get();
    return peakMoment(ready.layout, {}, simulate(trace, ready.filter, ready.layout, {}, options))
        .describe(ready.chain.names);
  });
  auto fixedPlans = [&] {
    if (recorded.valid()) a.baseline.peak_where = recorded.get();
    if (every.valid()) a.every = every.get();
    if (uniform.valid()) a.uniform = uniform.get();
  };

  SolverOptions opts = defaultSolverOptions(n, a.kind);
  if (req.max_segment_units >= 0) opts.max_segment_units = req.max_segment_units;
  if (a.tree_plan) {
    opts.tree_span_last = a.tree.spanLast();
    opts.tree_whole_only = a.tree.whole_only;
  }
  // Capping region length restricts the plans searched: say so.
  if (a.kind == SegmentKind::Region && opts.max_segment_units > 0 && opts.max_segment_units < n)
    a.exact = false;
  if (a.strategy != Strategy::Optimal) fixedPlans();
  switch (a.strategy) {
    case Strategy::None: a.chosen = a.baseline; break;
    case Strategy::Every: a.chosen = a.every; break;
    case Strategy::Uniform: a.chosen = a.uniform; break;
    case Strategy::Matmuls: a.chosen = measure(trace, a, "matmuls", matmulPlan(a.chain)); break;
    case Strategy::Optimal: {
      if (!a.has_budget) {
        // The dual: the least peak within the allowed recompute time.
        Ns limit = static_cast<Ns>(*a.max_slowdown * static_cast<double>(a.baseline.step_ns));
        Solution s = leastPeakWithin(a.chain, limit, opts);
        a.exact = a.exact && s.exact;
        a.chosen = measure(trace, a, "optimal", s.segments);
        fixedPlans();
        break;
      }
      if (a.tree_plan) {
        bool exact = true;  // the block search is a comparison, not the answer
        a.blocks = solveThenSimulate(
            trace, a, block_chain, defaultSolverOptions(block_chain.size(), SegmentKind::Module), "blocks",
            [&](const Segments& s) { return a.tree.fromBlockPlan(s); }, exact);
      }
      if (auto best = optimalWithinBudget(trace, a, opts, fixedPlans)) {
        a.chosen = *best;
      } else {
        // The chain model is an upper bound; the least-peak plan may still
        // fit on the simulator, which has the last word.
        fixedPlans();
        // This fallback searches no less than the main one: `exact` keeps
        // saying only whether a front was thinned (it printed "search
        // thinned" even for 8-unit chains).
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
  fixedPlans();  // (taken already; the simulations must be done before their events go)
  a.recorded.reset();
  return a;
}

}  // namespace gcprof::advisor
