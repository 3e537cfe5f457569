// What a checkpoint's recomputation costs in time: one definition for the
// solvers' chain (unit_chain.h: forward_ns, gap_ns, each save-list's
// saved_ns) and the replay simulator (simulate/replay_simulator.h), so that
// the plan the solver prefers is the plan the simulator prices lower.
//
// In one recorded step, recomputing units [first..last] costs their forward
// times, the host gaps between them, less the time of the operator calls a
// selective save-list keeps (stepRecomputeNs). Over the run, each unit (with
// its save-list) and each inner gap is priced at the median over the steady
// training steps of its per-step cost -- the micro-steps of one training
// step added up, as recompute is compared with the optimizer step's time --
// and a segment costs the sum of those medians (segmentRecomputeNs), a plan
// the sum over its segments.
//
// Why per unit and not the median of each step's whole sum: the solvers add
// segment costs (a plan's cost must be a sum for the dynamic programme), and
// a median does not add. The solver once priced a save-list as the sum
// of its calls' medians while the simulator took the median of each step's
// sum; with noisy per-call times the two disagreed by up to 16 ms on the GPT
// sample and a budget sweep's recompute was not monotone.
#pragma once

#include <string>
#include <vector>

#include "units/op_table.h"
#include "units/step_layout.h"

namespace gcprof::advisor {

// The calls of unit `unit`'s forward in `step` that `save` names (none when
// `save` is empty): a selective checkpoint keeps their outputs.
std::vector<OpCall> keptCalls(const OpIndex& ops, const StepLayout& step, int unit,
                              const std::vector<std::string>& save);

// A selective checkpoint's own time in one step: PyTorch's selective
// checkpointing runs every operator call of the unit's forward through its
// policy in the forward and again in the recomputation (~18 us a call on
// this project's CPU VM, more than many calls' own time), measured in the job
// by the shim (OpIndex::selectiveNsPerOp). 0 when not measured.
Ns selectiveDispatchNs(const OpIndex& ops, const StepLayout& step, int unit);

// One step's cost of recomputing units [first..last] (save: the first
// unit's save-list, selective segments being single units), plus
// `dispatch_ns` (selectiveDispatchNs for a selective segment). Never below 0.
Ns stepRecomputeNs(const StepLayout& step, int first, int last, const std::vector<OpCall>& kept,
                   Ns dispatch_ns = 0);

// The median over the steady training steps of unit `unit`'s recompute
// with save-list `save` (empty: the whole unit).
Ns unitRecomputeNs(const RunLayout& layout, const OpIndex& ops, int unit,
                   const std::vector<std::string>& save = {});
// The median over the steady training steps of the host gap between unit
// k's forward and unit k+1's (0 where the unit's time is device time).
Ns gapRecomputeNs(const RunLayout& layout, int k);
// Units [first..last], the first with save-list `save`: the sum of the
// medians above.
Ns segmentRecomputeNs(const RunLayout& layout, const OpIndex& ops, int first, int last,
                      const std::vector<std::string>& save = {});

}  // namespace gcprof::advisor
