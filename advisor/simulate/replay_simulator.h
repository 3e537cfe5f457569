// Applies a plan to the recorded allocation trace itself (ARCHITECTURE,
// "Advisor semantics"). In every complete step, for each segment [i..j]:
//   - allocations born in its forward (F_i..F_j) and freed in its backward
//     (B_j..B_i) are freed when its forward ends instead;
//   - when its backward begins, its whole forward sub-trace is replayed:
//     transient allocations with their recorded lifetimes, dropped ones
//     re-made and freed when recorded, the rest freed when the replay ends;
//   - the replay's time (the segment's forward time) shifts everything after it.
// Everything else, parameters, gradients, optimizer state, workspaces and
// steps that are not complete, is carried exactly as recorded.
#pragma once

#include <utility>
#include <vector>

#include "chain/chain_peak.h"
#include "memory/memory_curve.h"
#include "memory/memory_events.h"
#include "units/step_layout.h"
#include "simulate/allocator_settings.h"

namespace gcprof::advisor {

class PlanContext;

struct SimulationOptions {
  bool want_curve = false;
  size_t max_curve_points = 0;  // 0: every point
  // The recorded run's events (RecordedEvents of the trace with the filter
  // simulated), when the caller has them: every plan simulated on one trace
  // shares them, and a plan's own events are then all a simulation sorts.
  // Null: made here.
  const RecordedEvents* recorded = nullptr;
  // Also replay the events through PyTorch's caching allocator with these
  // settings (simulate/caching_allocator.h) for the reserved memory.
  const AllocatorSettings* allocator = nullptr;
  // What every plan's events need of this trace, filter and layout
  // (simulate/plan_events.h), when the caller keeps one for several
  // simulations. Null: made here.
  const PlanContext* context = nullptr;
  // When not negative: stop walking as soon as the (allocated) peak passes
  // this, for a caller that only asks whether a plan fits (Simulation::stopped).
  Bytes stop_above = -1;
};

struct Simulation {
  Bytes peak = 0;
  Ns peak_time = 0;               // on the simulated timeline
  // Where the peak is on the recorded timeline (simulate/peak_moment.h names
  // it): the instant of the recorded events that set it, or when a replay
  // sets it, the replay's anchor (its segment's backward start) and the
  // offset into the forward it replays.
  Ns peak_at = 0;
  Ns peak_replay_offset = -1;     // -1: recorded events set the peak
  Ns recompute_ns = 0;            // per steady step, as the solvers price it (chain/recompute_cost.h)
  Ns step_ns = 0;                 // steady step time with recomputation (median)
  Ns total_recompute_ns = 0;      // over the whole run
  size_t steps_applied = 0;       // complete steps the plan was applied to
  size_t events = 0;              // memory events replayed, for the benchmark
  std::vector<MemoryPoint> curve; // simulated timeline (want_curve)
  std::vector<std::pair<Ns, Ns>> step_bounds;  // each recorded step on the simulated timeline
  // With SimulationOptions::allocator: the caching allocator's reserved
  // bytes at their peak (every device together), when it was reached on the
  // simulated timeline, and the allocated bytes as the allocator counts them
  // (rounded blocks, torch.cuda.max_memory_allocated).
  Bytes reserved_peak = 0;
  Ns reserved_peak_time = 0;
  Bytes allocated_blocks_peak = 0;
  // The peak passed SimulationOptions::stop_above: the plan does not fit
  // there; the other fields are the part walked only.
  bool stopped = false;
};

Simulation simulate(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                    const Segments& plan, const SimulationOptions& options = {});

}  // namespace gcprof::advisor
