// One `gcprof advise` from start to end, UI-free so that the CLI, the reports
// and the GUI share it: choose units, build the chain, solve, and check the
// answer on the replay simulator, which has the last word on every number a
// plan predicts.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chain/chain_peak.h"
#include "memory/memory_curve.h"
#include "chain/module_tree.h"
#include "units/module_stats.h"
#include "units/step_layout.h"
#include "chain/unit_chain.h"
#include "chain/recording_cost.h"
#include "units/unit_selection.h"
#include "units/unsafe_units.h"
#include "plan/headroom.h"
#include "plan/memory_measure.h"
#include "simulate/replay_simulator.h"
#include "simulate/simulation_memo.h"
#include "solve/optimal_solver.h"
#include "solve/strategy.h"

namespace gcprof::advisor {

struct Budget {
  bool percent = false;
  double fraction = 0;  // of the recorded peak, when percent
  Bytes bytes = 0;
  std::string text;     // as the user wrote it
  Bytes resolve(Bytes recorded_peak) const;

  // A share of the recorded peak, written as "60%" (0.6); a size in bytes.
  static Budget share(double fraction);
  static Budget size(Bytes bytes);
};

struct AdviceRequest {
  std::string units = "auto";
  Strategy strategy = Strategy::Optimal;
  std::optional<Budget> budget;
  std::optional<double> max_slowdown;   // 0.3 = 30% more step time
  std::optional<SegmentKind> kind;      // default: from the run's runtime
  int max_segment_units = -1;          // -1: defaultSolverOptions' rule, 0: no limit
  HeadroomRequest headroom;            // default: the rule in headroom.h
  // Plans over the module tree (module_tree.h): with `--units auto` on a
  // python run (module segments), a block may be checkpointed whole or by
  // its sub-modules. False keeps plans to the units of one level (what-if,
  // multi-process jobs; `matmuls` keeps to the blocks whatever this says).
  bool tree = true;
  // Offer selective checkpoints (a save-list per unit) when the trace has
  // operator ranges (`record --ops`) and segments are modules.
  bool selective = true;
  // Which memory the budget counts (plan/memory_measure.h); default:
  // reserved on CUDA runs the allocator model covers, allocated otherwise.
  std::optional<MemoryMeasure> memory;
  // Keep the chain's per-step moments and instants (UnitChain::*_moments):
  // the what-if fits them over sizes; nothing else reads them, and on a
  // 10M-allocation run they are hundreds of MB.
  bool moments = false;
};

// A plan with what the simulator predicts for it.
struct PlanOutcome {
  std::string name;        // none | every | uniform | optimal
  Segments segments;
  Bytes peak = 0;          // simulated, allocated (tensor) bytes
  Bytes reserved_peak = -1;  // the caching allocator's reserved bytes, predicted; -1: not modelled
  Ns recompute_ns = 0;     // per step
  Ns step_ns = 0;
  Bytes chain_peak = 0;    // the unit-chain model's bound, for diagnostics
  // The moment that sets `peak`, from the simulator (simulate/peak_moment.h);
  // what-if predictions at an unrecorded size have no trace to simulate and
  // name the chain model's moment.
  std::string peak_where;
  bool fits = true;        // the budgeted peak <= budget - headroom (true without a budget)
};

struct Advice {
  RunInfo run;
  SegmentKind kind = SegmentKind::Region;
  AllocationFilter filter;
  // While advise() works: the recorded events of `filter`, sorted once and
  // shared by the chain and every plan simulated (null afterwards: on a big
  // trace they are two events of 4 bytes per allocation, and they refer to
  // the trace's rows).
  std::shared_ptr<const RecordedEvents> recorded;
  // The plans simulated on `layout` so far (a copy of the advice starts
  // with none); measuring a plan again reads it here.
  mutable SimulationMemo simulations;
  std::vector<ModuleStats> modules;
  UnitSelection units;            // the blocks (units of one level)
  // The chain's units: the blocks, or for a plan over the module tree the
  // blocks' sub-modules (tree.anySplit()); segments index tree.names.
  ModuleTree tree;
  bool tree_plan = false;         // the solver chose among blocks and their sub-modules
  std::string tree_note;          // why not, when a plan over the tree was tried and not made
  std::vector<ExcludedUnit> excluded;  // left out: unsafe to checkpoint, or frozen (no backward)
  RunLayout layout;               // forward times less the recording's own cost
  RecordingCost recording_cost;   // that cost per call, as measured (0: none recorded)
  UnitChain chain;

  Strategy strategy = Strategy::Optimal;
  bool has_budget = false;
  Bytes budget = 0;             // resolved; the recorded peak when none was given
  std::string budget_text;
  Headroom headroom;            // kept free below the budget (none without a budget)
  HeadroomRequest headroom_request;  // the rule it came from (how it grows with the budget)
  std::optional<double> max_slowdown;

  MemoryChoice memory;          // which memory the budget counts
  // What plans are solved against: the budget less the headroom.
  Bytes limit() const { return budget - headroom.bytes; }
  // The peak the budget counts: reserved or allocated.
  Bytes budgeted(const PlanOutcome& o) const {
    return memory.measure == MemoryMeasure::Reserved ? o.reserved_peak : o.peak;
  }

  PlanOutcome baseline, every, uniform;
  // Tree plans only: the least-recompute plan over whole blocks (block
  // chain, simulated on this chain); the tree answer is never worse.
  std::optional<PlanOutcome> blocks;
  PlanOutcome chosen;           // the answer (also for strategies none/every/uniform)
  bool feasible = true;         // chosen fits the budget and the slowdown limit
  bool exact = true;            // the optimal search was not thinned
  std::string message;          // why not feasible, with the smallest reachable peak
  Bytes min_reachable_peak = -1;  // filled when infeasible
  // The least budget (as printed) at which this strategy's plan fits, its
  // headroom included: what "raise the budget to at least" names. -1 when
  // the plan fits, or when no budget helps (a slowdown limit, a 100% margin).
  Bytes least_budget = -1;
  PlanOutcome minimum;            // the plan that reaches it
};

// What the default headroom is sized from (headroom.h): the jitter of the
// recorded peaks, the checkpoint arguments not told apart, what applies plans.
TraceMargins traceMargins(const Trace& trace, const Advice& a);

// How many modules a plan checkpoints: one per segment with module segments
// (over the module tree a whole block is one), else the units its regions span.
int checkpointedModules(const PlanOutcome& plan, const Advice& advice);

// Throws AdviceError for bad input (no units, incomplete steps, ...).
Advice advise(const Trace& trace, const AdviceRequest& request);

// The outcome of an arbitrary plan on the same run (used by tests and reports).
PlanOutcome outcomeOf(const Trace& trace, const Advice& advice, const std::string& name,
                      const Segments& segments);
// outcomeOf when the plan fits the budget; none when it does not, found by a
// simulation that stops where the peak passes the limit (a search only needs
// to know that).
std::optional<PlanOutcome> outcomeIfFits(const Trace& trace, const Advice& advice, const std::string& name,
                                         const Segments& segments);

}  // namespace gcprof::advisor
