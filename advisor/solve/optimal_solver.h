// The least-recompute plan whose chain peak fits a budget, exactly.
//
// Every constraint of the chain peak (chain_peak.h) is a lower bound on D,
// the bytes dropped by the segments already passed, so a partial plan is
// summed up by (recompute so far, D): one with no more recompute and no less
// D is never worse. A dynamic program over unit positions keeps the Pareto
// front of those pairs and extends each by "unit k not checkpointed" or
// "segment [k..j]", checking the constraints on the way; the cheapest state
// after the last unit is optimal. Feasibility alone needs only the largest D
// per position, which gives the smallest reachable peak by bisection.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "chain/chain_peak.h"
#include "solve/strategy.h"

namespace gcprof::advisor {

struct SolverOptions {
  SegmentKind kind = SegmentKind::Region;
  int max_segment_units = 0;  // 0: no limit (region); module segments are always 1
  Ns cost_limit = std::numeric_limits<Ns>::max();  // prune plans recomputing more
  size_t max_front = 1u << 20;  // Pareto states per position before thinning (then inexact)
  // Plans over the module tree (chain/module_tree.h): when not empty, the
  // only segments are single units and, per unit k with tree_span_last[k] >= 0,
  // the span [k..tree_span_last[k]] (a whole block); `kind` and
  // max_segment_units are then not used.
  std::vector<int> tree_span_last;
  // Per chain unit: true where the unit may be checkpointed only inside its
  // block's span, never alone (ModuleTree::whole_only).
  std::vector<bool> tree_whole_only;

  // Whether [first..last] is a segment these options allow.
  bool allows(int first, int last) const;
  bool allows(const Segments& plan) const;
};

// What `advise` uses: exact for chains of up to 64 units; beyond, at most
// 1024 (module) or 64 (region) Pareto states per position (the solution says
// when that thinned the search) and region segments of at most
// max(16, 2 round(sqrt N)) units (longer segments re-make more at once than
// sqrt(N) checkpointing keeps).
SolverOptions defaultSolverOptions(int units, SegmentKind kind);

struct Solution {
  bool feasible = false;
  Segments segments;
  Ns recompute_ns = 0;
  Bytes peak = 0;       // chain peak of `segments`
  bool exact = true;    // false when a front had to be thinned
  size_t states = 0;    // work done, for the benchmark
};

Solution solveOptimal(const UnitChain& chain, Bytes budget, const SolverOptions& options);

// Whether any plan's chain peak fits `budget` (the plan found, when one does).
Solution anyFeasible(const UnitChain& chain, Bytes budget, const SolverOptions& options);

// The smallest chain peak any plan reaches (exact, by bisection on bytes).
Solution minimumPeak(const UnitChain& chain, const SolverOptions& options);

// The smallest chain peak among plans recomputing at most `cost_limit` ns.
Solution leastPeakWithin(const UnitChain& chain, Ns cost_limit, const SolverOptions& options);

}  // namespace gcprof::advisor
