#include "simulate/replay_simulator.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "memory/cache_allocations.h"
#include "chain/checkpointed_forward.h"
#include "chain/checkpoint_arguments.h"
#include "chain/in_place_outputs.h"
#include "median.h"
#include "memory/memory_events.h"
#include "units/op_table.h"
#include "chain/recompute_cost.h"
#include "chain/reentrant_holds.h"
#include "units/step_regions.h"
#include "saturating.h"
#include "simulate/reserved_memory.h"

namespace gcprof::advisor {
namespace {

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

// A recorded allocation or free, as the simulator orders it.
SimEvent asRecorded(const MemoryEvent& m) { return {m.time, 0, m.delta, 0, 1, nullptr}; }

bool before(const SimEvent& a, const SimEvent& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.phase != b.phase) return a.phase < b.phase;
  if (a.rel != b.rel) return a.rel < b.rel;
  if (a.delta != b.delta) return a.delta < b.delta;
  // Only the reserved-memory replay tells these apart: a fixed order.
  return (a.src ? a.src->id : 0) < (b.src ? b.src->id : 0);
}

// A lambda, not `before` itself: std::sort then inlines the comparison
// instead of calling through a function pointer (these sorts are 13% of
// advise on a 1M-allocation trace).
void sortInTimeOrder(std::vector<SimEvent>& events) {
  std::sort(events.begin(), events.end(), [](const SimEvent& x, const SimEvent& y) { return before(x, y); });
}

// Adds the events one segment changes in one step; returns its recompute time.
// FSDP's parameter gathers (ranges the python shim marks "fsdp.unshard
// <module>"): the recomputation in backward uses the parameters gathered for
// backward, which the trace holds already, so a replay must not repeat them.
std::unordered_set<int64_t> parameterGathers(const Trace& trace) {
  std::unordered_set<int64_t> out;
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::User && r.name.rfind("fsdp.unshard ", 0) == 0) out.insert(r.id);
  return out;
}

Ns applySegment(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                const StepRegions& reg, const Segment& seg, const OpIndex& ops,
                const std::unordered_set<int64_t>& gathers, const InPlaceOutputs& inplace,
                const CheckpointedForward& forward, bool reentrant, std::vector<SimEvent>& ev) {
  const UnitWindow& first = step.units[seg.first];
  const UnitWindow& last = step.units[seg.last];
  // A selective segment's kept operator calls in this step, as time
  // windows: what is born inside them is not dropped and not replayed, and
  // their time is not recomputed (chain/recompute_cost.h).
  std::vector<OpCall> kept = seg.selective() ? keptCalls(ops, step, seg.first, seg.save) : std::vector<OpCall>{};
  Ns cost = stepRecomputeNs(step, seg.first, seg.last, kept);
  Ns anchor = last.bwd_start;
  uint8_t replay_phase = reg.regionOf(anchor) == reg.backward(seg.last) ? 0 : 2;
  Ns replay_end = sat::add(sat::sub(last.fwd_end, first.fwd_start), 1);
  int lo = StepRegions::forward(seg.first), hi = StepRegions::forward(seg.last);
  auto begin = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), first.fwd_start,
                                [](const Allocation& a, Ns t) { return a.alloc < t; });
  // The segment's output when its last unit ends in place: its consumer holds
  // it, so checkpointing does not drop it (chain/in_place_outputs.h).
  const Allocation* kept_output = inplace.output(step, reg, seg.last);
  // A reentrant checkpoint (the C++ runtime) holds the replayed output and
  // its gradient until the segment's backward ends (chain/reentrant_holds.h).
  ReentrantHolds holds;
  if (reentrant) holds = reentrantHolds(trace, filter, step, seg.first, seg.last);
  auto hold = [&](const Allocation& a, Ns recorded_free) {
    if (recorded_free >= holds.until) return;
    ev.push_back({recorded_free, 0, a.bytes, 0, 1, &a});
    ev.push_back({holds.until, 0, -a.bytes, 0, 1, &a});
  };
  if (holds.output_grad) hold(*holds.output_grad, holds.output_grad->free);
  if (!kept_output) kept_output = holds.output;
  for (auto it = begin; it != trace.allocations.end() && it->alloc <= last.fwd_end; ++it) {
    const Allocation& a = *it;
    if (!filter.counts(a) || keptByTheLibrary(a)) continue;
    int born = reg.regionOf(a.alloc);
    if (born < lo || born > hi) continue;
    int freed = a.freed() ? reg.regionOf(a.free) : StepRegions::kOutside;
    Ns rel = sat::sub(a.alloc, first.fwd_start);
    if (gathers.count(a.range)) continue;
    if (const OpCall* call = kept.empty() ? nullptr : callAt(kept, a.alloc)) {
      if (outputFate(a, *call, reg, seg.last) == OutputFate::Lingering) {
        // An output autograd does not keep, saved anyway (torchtitan's
        // rule): the checkpoint's cache holds it from the forward until the
        // replay, which uses it where the forward did. Its recorded free is
        // cancelled; it is freed in the replay where it was in the forward,
        // or when the replay ends.
        ev.push_back({a.free, 0, a.bytes, 0, 1, &a});
        ev.push_back({anchor, freed <= hi ? sat::sub(a.free, first.fwd_start) : replay_end, -a.bytes, 0,
                      replay_phase, &a});
      }
      continue;  // otherwise carried as recorded: kept to the backward, not re-made
    }
    ev.push_back({anchor, rel, a.bytes, 0, replay_phase, &a});
    if (freed >= born && freed <= hi) {  // transient: same lifetime in the replay
      ev.push_back({anchor, sat::sub(a.free, first.fwd_start), -a.bytes, 0, replay_phase, &a});
      continue;
    }
    int bpos = reg.backwardPosition(freed);
    if (&a == kept_output && bpos >= lo && bpos <= hi) {
      // Held by its consumer until the replay: freed as the replay begins.
      ev.push_back({anchor, 0, -a.bytes, 0, replay_phase, &a});
      if (&a == holds.output) hold(a, a.free);  // the replayed copy
    } else if (bpos >= lo && bpos <= hi) {
      // Dropped: freed as the segment's forward ends, or earlier, when the
      // sub-module that made it returns without it (checkpointed_forward.h);
      // the replayed copy is freed where the recorded one was.
      const UnitWindow& unit = step.units[seg.first + (born - lo) / 2];
      Ns early = forward.freeTime(a, unit.fwd_start, unit.fwd_end);
      if (early < unit.fwd_end)
        ev.push_back({early, 0, -a.bytes, 0, 1, &a});
      else
        ev.push_back({last.fwd_end, 0, -a.bytes, 0, 2, &a});
    } else if (&a == holds.output) {
      ev.push_back({holds.until, 0, -a.bytes, 0, 1, &a});  // the replayed copy
    } else {
      ev.push_back({anchor, replay_end, -a.bytes, 0, replay_phase, &a});
    }
  }
  ev.push_back({anchor, LLONG_MAX, 0, std::max<Ns>(cost, 1), replay_phase, nullptr});
  return cost;
}

// The arguments of each segment's checkpointed call (chain/
// checkpoint_arguments.h) are held until the segment's backward ends; the
// recorded run may have freed them earlier (HF GPT-2's attention mask, when
// the model's forward returns). The latest of the frees is kept: every
// block is passed the same mask, and the first block's checkpoint, whose
// backward ends last, decides.
void holdArguments(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                   const Segments& plan, std::vector<SimEvent>& ev) {
  std::unordered_map<const Allocation*, Ns> until;
  for (const Segment& seg : plan) {
    const Range* call = checkpointedCall(trace, step, seg.first, seg.last);
    if (!call) continue;
    Ns end = step.units[seg.first].bwd_end;
    for (const Allocation* a : callArguments(trace, filter, step, *call))
      if (a->freed() && a->free < end) until[a] = std::max(until[a], end);
  }
  for (const auto& [a, end] : until) {
    ev.push_back({a->free, 0, a->bytes, 0, 1, a});  // cancels the recorded free
    ev.push_back({end, 0, -a->bytes, 0, 1, a});
  }
}

// The caching allocator's view of one event; its reserved bytes only grow
// (the model never gives a segment back), so the peak is where it last grew.
void trackReserved(ReservedMemory& reserved, const SimEvent& e, Ns t, Simulation& sim) {
  if (e.delta > 0)
    reserved.allocate(*e.src, e.delta);
  else
    reserved.release(*e.src);
  if (reserved.reserved() > sim.reserved_peak) {
    sim.reserved_peak = reserved.reserved();
    sim.reserved_peak_time = t;
  }
  sim.allocated_blocks_peak = std::max(sim.allocated_blocks_peak, reserved.allocatedBlocks());
}

// The recorded and the plan's events walked as one sorted list: the live
// bytes, the recompute time inserted so far, the peak and the curve. An
// event is counted once the next is known (the end of its instant).
class Walk {
 public:
  Walk(Simulation& sim, const SimulationOptions& options) : sim_(sim), options_(options) {
    if (options.allocator) reserved_.emplace(*options.allocator);
  }
  void add(const SimEvent& e) {
    if (has_pending_) count(pending_, &e);
    pending_ = e;
    has_pending_ = true;
  }
  void finish() {
    if (has_pending_) count(pending_, nullptr);
    has_pending_ = false;
  }
  // The recorded events of `block` at once, in place of add() of each, when
  // nothing else is merged between them and the recorded event after the
  // block (the caller checks): the level rises by the block's sum, and the
  // peak is the block's top when that is higher. False, having added
  // nothing, when the block must be walked event by event: a curve or the
  // allocator model wants every event, or the sums could saturate.
  bool addBlock(const RecordedEvents& recorded, size_t first) {
    const RecordedEvents::Block& block = recorded.block(first / RecordedEvents::kBlock);
    constexpr Bytes kSmall = Bytes{1} << 61;
    if (options_.want_curve || reserved_ || !block.small || live_ <= -kSmall || live_ >= kSmall) return false;
    const SimEvent head = asRecorded(recorded[first]);
    if (has_pending_) count(pending_, &head);
    has_pending_ = false;
    if (block.has_top && live_ + block.top > sim_.peak) {
      const Ns at = recorded.time(block.top_at);
      sim_.peak = live_ + block.top;
      sim_.peak_time = sat::add(at, shift_);
      sim_.peak_at = at;
      sim_.peak_replay_offset = -1;
    }
    live_ += block.sum;
    return true;
  }

 private:
  void count(const SimEvent& e, const SimEvent* next) {
    if (e.shift > 0) {
      sat::addTo(shift_, e.shift);
      return;
    }
    sat::addTo(live_, e.delta);
    if (reserved_ && e.src) trackReserved(*reserved_, e, sat::add(sat::add(e.time, shift_), e.rel), sim_);
    if (next && next->time == e.time && next->phase == e.phase && next->rel == e.rel) return;
    Ns t = sat::add(sat::add(e.time, shift_), e.rel);  // rel is 0 for recorded events and drops
    if (live_ > sim_.peak) {
      sim_.peak = live_;
      sim_.peak_time = t;
      sim_.peak_at = e.time;
      sim_.peak_replay_offset = e.phase == 1 ? -1 : e.rel;  // drops (phase 2) only lower it
    }
    if (options_.want_curve) sim_.curve.push_back({t, live_});
  }

  Simulation& sim_;
  const SimulationOptions& options_;
  SimEvent pending_{};
  bool has_pending_ = false;
  Bytes live_ = 0;
  Ns shift_ = 0;
  std::optional<ReservedMemory> reserved_;
};

// Feeds `walk` the recorded events from `r` on and the sorted plan events
// `plan[p..]`, merged, while they are before `limit` (all of them when
// `all`). Events equal in `before` are equal in every field that counts,
// so which goes first changes nothing.
void walkUntil(Walk& walk, const RecordedEvents& recorded, size_t& r, const std::vector<SimEvent>& plan,
               size_t& p, Ns limit, bool all) {
  constexpr size_t kBlock = RecordedEvents::kBlock;
  for (;;) {
    // A whole block of recorded events when the plan's next event and the
    // limit are past the recorded event after it.
    if (r % kBlock == 0 && r + kBlock < recorded.size()) {
      const SimEvent after = asRecorded(recorded[r + kBlock]);
      if ((all || after.time < limit) && (p >= plan.size() || !before(plan[p], after)) &&
          walk.addBlock(recorded, r)) {
        r += kBlock;
        continue;
      }
    }
    const SimEvent next = r < recorded.size() ? asRecorded(recorded[r]) : SimEvent{};
    bool have_r = r < recorded.size() && (all || next.time < limit);
    bool have_p = p < plan.size() && (all || plan[p].time < limit);
    if (!have_r && !have_p) return;
    if (have_r && (!have_p || !before(plan[p], next))) {
      walk.add(next);
      ++r;
    } else {
      walk.add(plan[p++]);
    }
  }
}

// The earliest time any event of the plan in `step` can have: all of them
// are at or after its start, its units' windows or the allocations born in
// them (replay_simulator.h). Checked as the events are made.
Ns earliestEvent(const StepLayout& step) {
  Ns t = step.start;
  for (const UnitWindow& u : step.units) t = std::min({t, u.fwd_start, u.fwd_end, u.bwd_start, u.bwd_end});
  return t;
}

// With the caching allocator model each event needs its allocation, which
// the shared recorded events do not carry: the recorded events are then
// made here, with their allocations, and sorted in with the plan's.
std::vector<SimEvent> recordedWithAllocations(const Trace& trace, const AllocationFilter& filter) {
  std::vector<SimEvent> ev;
  for (const Allocation& a : trace.allocations) {
    if (!filter.counts(a)) continue;
    ev.push_back({a.alloc, 0, a.bytes, 0, 1, &a});
    if (a.freed()) ev.push_back({a.free, 0, -a.bytes, 0, 1, &a});
  }
  return ev;
}

// earliest[si]: no event of step si or of a later one is before it.
std::vector<Ns> earliestFromStep(const RunLayout& layout) {
  std::vector<Ns> earliest(layout.steps.size() + 1, LLONG_MAX);
  for (size_t si = layout.steps.size(); si-- > 0;)
    earliest[si] = std::min(earliest[si + 1], layout.steps[si].complete ? earliestEvent(layout.steps[si]) : Ns{LLONG_MAX});
  return earliest;
}

// Each step's bounds once the recompute of the steps before it (steps are
// in time order) and its own is inserted.
std::vector<std::pair<Ns, Ns>> shiftedStepBounds(const RunLayout& layout, const std::vector<Ns>& step_cost) {
  std::vector<std::pair<Ns, Ns>> bounds;
  Ns before = 0;
  for (size_t si = 0; si < layout.steps.size(); ++si) {
    const StepLayout& st = layout.steps[si];
    bounds.push_back({sat::add(st.start, before), sat::add(sat::add(st.end, before), step_cost[si])});
    sat::addTo(before, step_cost[si]);
  }
  return bounds;
}

// The steady steps' times with their recompute, per training step: the
// micro-steps of one step (gradient accumulation) add up, so recompute
// compares with the optimizer step's time.
std::vector<Ns> trainingStepTimes(const RunLayout& layout, const std::vector<Ns>& step_cost) {
  std::vector<Ns> step_time;
  int64_t current = 0;
  for (size_t k = 0; k < layout.steady.size(); ++k) {
    const StepLayout& st = layout.steps[layout.steady[k]];
    Ns time = sat::add(sat::sub(st.end, st.start), step_cost[layout.steady[k]]);
    if (k > 0 && st.step == current && st.step >= 0) {
      sat::addTo(step_time.back(), time);
      continue;
    }
    current = st.step;
    step_time.push_back(time);
  }
  return step_time;
}

// simulate() of one attempt; false when streaming and a step made an event
// before what was already walked.
bool simulateRun(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                 const Segments& plan, const SimulationOptions& options, bool streaming, Simulation& sim) {
  // With the allocator model the recorded events go into `ev` instead.
  const bool with_sources = options.allocator != nullptr;
  // With the allocator model, the recorded events to walk are none (own,
  // of no allocation).
  static const std::vector<Allocation> no_rows;
  std::optional<RecordedEvents> own;
  if (!options.recorded || with_sources) own.emplace(with_sources ? no_rows : trace.allocations, filter);
  const RecordedEvents& recorded = options.recorded && !with_sources ? *options.recorded : *own;
  // The plan's events not walked yet.
  std::vector<SimEvent> ev = with_sources ? recordedWithAllocations(trace, filter) : std::vector<SimEvent>{};
  std::vector<Ns> step_cost(layout.steps.size(), 0);
  std::unordered_set<int64_t> gathers = parameterGathers(trace);
  OpIndex ops(trace);
  InPlaceOutputs inplace(trace, filter);
  CheckpointedForward forward(trace, filter);
  const bool reentrant = reentrantCheckpoint(trace);
  const std::vector<Ns> earliest = earliestFromStep(layout);
  Walk walk(sim, options);
  size_t r = 0, p = 0;
  Ns walked = LLONG_MIN;  // every event before it is walked
  size_t events = 0;
  for (size_t si = 0; si < layout.steps.size(); ++si) {
    const StepLayout& step = layout.steps[si];
    if (!step.complete || plan.empty()) continue;
    if (streaming && earliest[si] > walked) {
      sortInTimeOrder(ev);
      p = 0;
      walkUntil(walk, recorded, r, ev, p, earliest[si], false);
      events += p;
      ev.erase(ev.begin(), ev.begin() + static_cast<std::ptrdiff_t>(p));
      walked = earliest[si];
    }
    size_t made = ev.size();
    StepRegions reg(step);
    holdArguments(trace, filter, step, plan, ev);
    for (const Segment& seg : plan)
      sat::addTo(step_cost[si], applySegment(trace, filter, step, reg, seg, ops, gathers, inplace, forward, reentrant, ev));
    for (size_t i = made; i < ev.size(); ++i)
      if (ev[i].time < walked) return false;  // too late: walked past it
    sat::addTo(sim.total_recompute_ns, step_cost[si]);
    ++sim.steps_applied;
  }
  sortInTimeOrder(ev);
  p = 0;
  walkUntil(walk, recorded, r, ev, p, 0, true);
  walk.finish();
  sim.events = events + ev.size() + recorded.size();

  if (options.want_curve && options.max_curve_points > 0)
    sim.curve = downsample(sim.curve, options.max_curve_points);

  sim.step_bounds = shiftedStepBounds(layout, step_cost);
  // The plan's recompute as the solvers price it: per segment the median
  // over the steady steps of each unit's (and inner gap's) cost, summed
  // (chain/recompute_cost.h), not the median of each step's total.
  if (sim.steps_applied > 0)
    for (const Segment& seg : plan)
      sat::addTo(sim.recompute_ns, segmentRecomputeNs(layout, ops, seg.first, seg.last,
                                                      seg.selective() ? seg.save : std::vector<std::string>{}));
  sim.step_ns = median(trainingStepTimes(layout, step_cost));
  return true;
}

}  // namespace

Simulation simulate(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                    const Segments& plan, const SimulationOptions& options) {
  // One step's events at a time: those before the earliest time a later
  // step's can have are walked and dropped, so that a plan over a long run
  // holds about one step of events (all of them held three events of 40
  // bytes per allocation of its segments, for each plan simulated at once).
  // Should a step make an event before that time after all, the run is
  // simulated again with every event kept.
  for (bool streaming : {true, false}) {
    Simulation sim;
    if (simulateRun(trace, filter, layout, plan, options, streaming, sim)) return sim;
  }
  return {};  // not reached: without streaming nothing is refused
}

}  // namespace gcprof::advisor
