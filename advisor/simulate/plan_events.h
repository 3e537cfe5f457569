// The events a plan adds to the recorded run, step by step, for the replay
// simulator (simulate/replay_simulator.h says what a plan changes): the
// drops of what its segments' forwards make, the replays in backward and
// the time they insert, in the one order the simulator walks them.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "chain/autocast_casts.h"
#include "chain/chain_peak.h"
#include "chain/checkpointed_forward.h"
#include "chain/in_place_outputs.h"
#include "simulate/early_frees.h"
#include "units/op_table.h"
#include "units/step_layout.h"
#include "units/step_regions.h"

namespace gcprof::advisor {

// Phases at one instant: a replay that begins in this instant's region goes
// first (0), recorded events next (1), drops and replays of a later region
// last (2). Every event at one instant lies in one region, so this matches
// the chain model's region maxima.
struct SimEvent {
  Ns time;
  Ns rel;         // offset within a replay; 0 for recorded events
  Bytes delta;
  Ns shift;       // > 0: the marker ending a replay, adds this much time
  uint8_t phase;
  const Allocation* src;  // whose bytes; null for the replay-end marker
};

inline bool before(const SimEvent& a, const SimEvent& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.phase != b.phase) return a.phase < b.phase;
  if (a.rel != b.rel) return a.rel < b.rel;
  if (a.delta != b.delta) return a.delta < b.delta;
  // Only the reserved-memory replay tells these apart: a fixed order.
  return (a.src ? a.src->id : 0) < (b.src ? b.src->id : 0);
}

void sortInTimeOrder(std::vector<SimEvent>& events);

// What the plans' events need of the trace and its steps besides the plan
// itself, the same for every plan: made once and shared by the simulations
// of one advice (SimulationMemo), read only.
class PlanContext {
 public:
  PlanContext(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout);

  const Trace& trace;
  const AllocationFilter filter;
  const std::unordered_set<int64_t> gathers;  // FSDP's parameter gathers (range ids)
  const OpIndex ops;
  const bool reentrant;  // the C++ runtime's checkpoint
  const CheckpointedForward forward;  // what a checkpointed forward frees early
  const EarlyFrees early_frees;  // forward's answers, by complete step of the layout
  const AutocastCasts casts;     // parameter copies autocast's cache holds to its clear

  // InPlaceOutputs::output of unit k of complete step si of the layout: the segment's
  // output its consumer holds when k ends a segment.
  const Allocation* keptOutput(size_t si, int k) const { return kept_outputs_[si][static_cast<size_t>(k)]; }
  // The first row of trace.allocations born at or after unit k's forward
  // start in complete step si: where a segment beginning with k looks for
  // its forward's allocations (searched once, not once per plan).
  size_t firstRow(size_t si, int k) const { return first_rows_[si][static_cast<size_t>(k)]; }

 private:
  std::vector<std::vector<const Allocation*>> kept_outputs_;
  std::vector<std::vector<size_t>> first_rows_;
};

// One step's plan events as they are made. Most are a segment's replay, all
// at one instant and phase (its anchor), the re-made allocations already in
// time order: each replay is kept as a sorted run, and the step's events
// are merged from them and the rest, sorted, instead of sorted together.
class StepEvents {
 public:
  void add(const SimEvent& e) { append(loose_, e); }      // anywhere in the step
  void remade(const SimEvent& e) { append(remade_, e); }  // the replay's, in allocation order
  void replay(const SimEvent& e) { append(replay_, e); }  // the replay's, any other
  void endReplay();  // after a segment's replay events
  // Appends the step's events to `out` in before() order and forgets them;
  // false when the first of them goes before the last of `out`.
  bool appendSorted(std::vector<SimEvent>& out);

 private:
  // push_back(e) of a braced temporary copied it in 16-byte loads that
  // waited on the byte just stored for its phase (store forwarding fails on
  // a load spanning two stores): a fifth of applySegment. Field by field,
  // the values go straight into the vector.
  static void append(std::vector<SimEvent>& v, const SimEvent& e) {
    SimEvent& to = v.emplace_back();
    to.time = e.time;
    to.rel = e.rel;
    to.delta = e.delta;
    to.shift = e.shift;
    to.phase = e.phase;
    to.src = e.src;
  }

  struct Run {
    Ns time;
    uint8_t phase;
    size_t begin, end;  // in runs_
  };
  std::vector<SimEvent> loose_, remade_, replay_, runs_, ordered_;
  std::vector<Run> run_of_;
};

// Adds the events one segment changes in one step; returns its recompute time.
Ns applySegment(const PlanContext& ctx, const StepLayout& step, size_t si, const StepRegions& reg,
                const Segment& seg, StepEvents& out);

// The arguments of each segment's checkpointed call held until its backward ends.
void holdArguments(const PlanContext& ctx, const StepLayout& step, const Segments& plan, StepEvents& out);

}  // namespace gcprof::advisor
