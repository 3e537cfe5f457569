#include "plan/advice.h"

#include <cmath>
#include <functional>
#include <future>
#include <cstdio>

#include "byte_text.h"
#include "advice_error.h"
#include "saturating.h"
#include "chain/reentrant_holds.h"
#include "plan/budget_search.h"
#include "plan/infeasible_message.h"
#include "simulate/peak_moment.h"
#include "solve/fixed_plans.h"
#include "units/step_time.h"

namespace gcprof::advisor {

namespace {

// outcomeOf, or none when `stop_above` is not negative and the simulated
// peak passes it.
std::optional<PlanOutcome> simulatedOutcome(const Trace& trace, const Advice& a, const std::string& name,
                                            const Segments& segments, Bytes stop_above) {
  PlanOutcome o;
  o.name = name;
  o.segments = segments;
  SimulationOptions options;
  options.recorded = a.recorded.get();
  if (a.memory.reserved_modelled) options.allocator = &a.memory.allocator;
  options.stop_above = stop_above;
  Simulation sim = a.simulations.simulate(trace, a.filter, a.layout, segments, options);
  if (sim.stopped) return std::nullopt;
  o.peak = sim.peak;
  if (a.memory.reserved_modelled) o.reserved_peak = sim.reserved_peak;
  o.recompute_ns = sim.recompute_ns;
  o.step_ns = sat::add(a.baseline.step_ns, sim.recompute_ns);
  o.chain_peak = evaluateChain(a.chain, segments).peak;
  o.peak_where = peakMoment(a.layout, segments, sim).describe(a.chain.names);
  o.fits = !a.has_budget || a.budgeted(o) <= a.limit();
  return o;
}

}  // namespace

PlanOutcome outcomeOf(const Trace& trace, const Advice& a, const std::string& name, const Segments& segments) {
  return *simulatedOutcome(trace, a, name, segments, -1);
}

std::optional<PlanOutcome> outcomeIfFits(const Trace& trace, const Advice& a, const std::string& name,
                                         const Segments& segments) {
  // The simulator stops on the allocated peak: with a budget of reserved
  // bytes (or none) the whole simulation decides.
  const bool allocated = a.has_budget && a.memory.measure != MemoryMeasure::Reserved;
  std::optional<PlanOutcome> o = simulatedOutcome(trace, a, name, segments, allocated ? a.limit() : -1);
  if (o && !o->fits) return std::nullopt;
  return o;
}

TraceMargins traceMargins(const Trace& trace, const Advice& a) {
  TraceMargins m;
  m.jitter = stepPeakJitter(trace, a.filter, a.chain.steady_step, a.recorded.get());
  m.untold_arguments = a.chain.untold_arguments;
  m.device = a.filter.device;
  m.native = reentrantCheckpoint(trace);
  return m;
}

namespace {

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

// When the blocks are not a chain (their backward ranges nest), the stages
// they were found in may be (unit_selection.h).
void fallBackToStages(const Trace& trace, Advice& a, const std::vector<std::string>& stage_names) {
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

// The units plans checkpoint, their steps laid out, less those unsafe to
// checkpoint or with nothing to drop.
void chooseUnits(const Trace& trace, Advice& a, const AdviceRequest& req) {
  a.units = selectUnits(trace, a.modules, req.units);
  std::vector<std::string> stage_names = a.units.stage_names;
  a.excluded = excludeUnsafeUnits(a.units, unsafeModules(trace));
  a.layout = stepLayouts(trace, a.units.names);
  if (a.layout.complete == 0 && !stage_names.empty()) fallBackToStages(trace, a, stage_names);
  for (const std::string& name : forwardOnlyBlocks(a.modules, a.units.names))
    a.excluded.push_back({name, "runs no backward (frozen, and nothing trainable below it): it keeps "
                                "no activations for a backward, so there is nothing to drop"});
}

// The chain the solver searches: over the units, or over the module tree
// when the run allows it (then `block_chain` keeps the units' chain).
void modelChain(const Trace& trace, Advice& a, const AdviceRequest& req, UnitChain& block_chain) {
  a.recording_cost = recordingCost(trace);
  subtractRecordingCost(a.layout, trace, a.recording_cost);
  a.chain = buildUnitChain(trace, a.filter, a.layout, a.units.names, a.recorded.get(), req.moments);
  a.kind = req.kind ? *req.kind : segmentKindFor(trace.run.runtime);
  a.tree = flatTree(a.units.names);
  // torchtitan's rule (`matmuls`) checkpoints each block as one region with
  // its save-list: over the tree its sub-modules' inputs would be kept too.
  if (req.tree && req.strategy != Strategy::Matmuls && req.units == "auto" && a.kind == SegmentKind::Module &&
      segmentKindFor(trace.run.runtime) == SegmentKind::Module)
    planOverTree(trace, a, block_chain, req.moments);
  // Selective checkpoints are applied by the python runtime, one module each
  // (over the module tree: the sub-modules').
  if (a.kind == SegmentKind::Module && req.selective) addSelectiveOptions(a.chain, trace, a.filter, a.layout, a.recorded.get());
}

// The memory the budget counts, the budget and the headroom kept below it.
void resolveBudget(const Trace& trace, Advice& a, const AdviceRequest& req) {
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
    a.headroom = resolveHeadroom(req.headroom, a.budget, traceMargins(trace, a));
    if (a.headroom.bytes < 0 || a.headroom.bytes >= a.budget)
      throw AdviceError("headroom " + formatBytes(a.headroom.bytes) + " (" + a.headroom.rule +
                        ") leaves nothing of the budget " + formatBytes(a.budget) +
                        "; give a smaller --headroom");
  }
}

// The budget-blind plans (`every`, `uniform`) and the recorded run's peak
// moment, simulated on other threads while the solver runs: on large traces
// the simulations dominate the time of `advise`. They only read fields of
// the advice that are final when this starts.
class FixedPlanSimulations {
 public:
  FixedPlanSimulations(const Trace& trace, const Advice& a) {
    // Over the module tree, `every` and `uniform` stay plans of whole blocks
    // (the common practice they stand for).
    int n = a.chain.size();
    int blocks = a.tree.blocks.empty() ? n : static_cast<int>(a.tree.blocks.size());
    Segments every_plan = a.tree.fromBlockPlan(everyUnit(blocks)),
             uniform_plan = a.tree_plan ? a.tree.fromBlockPlan(uniformPlan(blocks, SegmentKind::Module))
                                        : uniformPlan(n, a.kind);
    every_ = std::async(std::launch::async, [&trace, &a, every_plan] { return outcomeOf(trace, a, "every", every_plan); });
    uniform_ = std::async(std::launch::async,
                          [&trace, &a, uniform_plan] { return outcomeOf(trace, a, "uniform", uniform_plan); });
    // The recorded run's peak moment, from the simulator like every plan's.
    recorded_ = std::async(std::launch::async, [&trace, &a] {
      SimulationOptions options;
      options.recorded = a.recorded.get();
      return peakMoment(a.layout, {}, simulate(trace, a.filter, a.layout, {}, options)).describe(a.chain.names);
    });
  }

  // Waits for the simulations and stores them in `a` (once; later calls do nothing).
  void collect(Advice& a) {
    if (recorded_.valid()) a.baseline.peak_where = recorded_.get();
    if (every_.valid()) a.every = every_.get();
    if (uniform_.valid()) a.uniform = uniform_.get();
  }

 private:
  std::future<PlanOutcome> every_, uniform_;
  std::future<std::string> recorded_;
};

SolverOptions solverOptions(Advice& a, const AdviceRequest& req) {
  int n = a.chain.size();
  SolverOptions opts = defaultSolverOptions(n, a.kind);
  if (req.max_segment_units >= 0) opts.max_segment_units = req.max_segment_units;
  if (a.tree_plan) {
    opts.tree_span_last = a.tree.spanLast();
    opts.tree_whole_only = a.tree.whole_only;
  }
  // Capping region length restricts the plans searched: say so.
  if (a.kind == SegmentKind::Region && opts.max_segment_units > 0 && opts.max_segment_units < n)
    a.exact = false;
  return opts;
}

// The optimal strategy's answer: the least recompute within the budget, or
// without one the least peak within the allowed slowdown.
PlanOutcome optimalPlan(const Trace& trace, Advice& a, const SolverOptions& opts, const UnitChain& block_chain,
                        const std::function<void()>& fixed_plans) {
  if (!a.has_budget) {
    Ns limit = static_cast<Ns>(*a.max_slowdown * static_cast<double>(a.baseline.step_ns));
    Solution s = leastPeakWithin(a.chain, limit, opts);
    a.exact = a.exact && s.exact;
    PlanOutcome chosen = outcomeOf(trace, a, "optimal", s.segments);
    fixed_plans();
    return chosen;
  }
  if (a.tree_plan) {
    bool exact = true;  // the block search is a comparison, not the answer
    a.blocks = solveThenSimulate(
        trace, a, block_chain, defaultSolverOptions(block_chain.size(), SegmentKind::Module), "blocks",
        [&](const Segments& s) { return a.tree.fromBlockPlan(s); }, exact);
  }
  if (auto best = optimalWithinBudget(trace, a, opts, fixed_plans)) return *best;
  // The chain model is an upper bound; the least-peak plan may still fit on
  // the simulator, which has the last word.
  fixed_plans();
  // This fallback searches no less than the main one: `exact` keeps saying
  // only whether a front was thinned (it printed "search thinned" even for
  // 8-unit chains).
  Solution m = minimumPeak(a.chain, opts);
  return outcomeOf(trace, a, "optimal", m.segments);
}

PlanOutcome strategyPlan(const Trace& trace, Advice& a, const SolverOptions& opts, const UnitChain& block_chain,
                         const std::function<void()>& fixed_plans) {
  if (a.strategy != Strategy::Optimal) fixed_plans();
  switch (a.strategy) {
    case Strategy::None: return a.baseline;
    case Strategy::Every: return a.every;
    case Strategy::Uniform: return a.uniform;
    case Strategy::Matmuls: return outcomeOf(trace, a, "matmuls", matmulPlan(a.chain));
    case Strategy::Optimal: break;
  }
  return optimalPlan(trace, a, opts, block_chain, fixed_plans);
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

Advice advise(const Trace& trace, const AdviceRequest& req) {
  Advice a;
  a.run = trace.run;
  refuseRetainedGraphs(trace);
  a.filter = primaryFilter(trace);
  a.recorded = std::make_shared<const RecordedEvents>(trace.allocations, a.filter);
  a.modules = moduleStats(trace, a.filter);
  chooseUnits(trace, a, req);
  UnitChain block_chain;
  modelChain(trace, a, req, block_chain);
  a.strategy = req.strategy;
  a.max_slowdown = req.max_slowdown;
  resolveBudget(trace, a, req);
  if (a.strategy == Strategy::Optimal && !a.has_budget && !a.max_slowdown)
    throw AdviceError("optimal needs a target: give --budget (6GiB, 60%) or --max-slowdown (30%)");

  a.baseline.name = "none";
  // Step time as `verify` measures it, so that prediction and measurement
  // share one definition; the plan adds its recompute per step.
  a.baseline.step_ns = trace.steps.empty() ? a.chain.step_ns : medianStepNs(trace);
  a.baseline.chain_peak = evaluateChain(a.chain, {}).peak;
  a.baseline.fits = !a.has_budget || a.budgeted(a.baseline) <= a.limit();
  FixedPlanSimulations fixed(trace, a);
  auto fixedPlans = [&] { fixed.collect(a); };

  SolverOptions opts = solverOptions(a, req);
  a.chosen = strategyPlan(trace, a, opts, block_chain, fixedPlans);
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
    a.message = slowdownMessage(a);
  }
  fixedPlans();  // (taken already; the simulations must be done before their events go)
  a.recorded.reset();
  return a;
}

}  // namespace gcprof::advisor
