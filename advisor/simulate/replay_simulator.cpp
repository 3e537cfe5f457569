#include "simulate/replay_simulator.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "chain/recompute_cost.h"
#include "median.h"
#include "memory/memory_events.h"
#include "units/step_regions.h"
#include "saturating.h"
#include "simulate/plan_events.h"
#include "simulate/reserved_memory.h"

namespace gcprof::advisor {
namespace {

// A recorded allocation or free, as the simulator orders it.
SimEvent asRecorded(const MemoryEvent& m) { return {m.time, 0, m.delta, 0, 1, nullptr}; }

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
  Walk(Simulation& sim, const SimulationOptions& options, const Trace& trace)
      : sim_(sim), options_(options), stop_above_(options.stop_above >= 0 ? options.stop_above : LLONG_MAX) {
    if (options.allocator) reserved_.emplace(*options.allocator, trace);
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
  // The peak passed options.stop_above: nothing later can bring it back under.
  bool stopped() const { return sim_.peak > stop_above_; }
  // The recorded events of `block` at once, in place of add() of each, when
  // nothing else is merged between them and the recorded event after the
  // block (the caller checks): the level rises by the block's sum, and the
  // peak is the block's top when that is higher. False, having added
  // nothing, when the block must be walked event by event: a curve or the
  // allocator model wants every event, or the sums could saturate.
  bool addBlock(const RecordedEvents& recorded, size_t first) {
    const RecordedEvents::Block& block = recorded.block(first / RecordedEvents::kBlock);
    if (options_.want_curve || reserved_ || !block.passableAt(live_)) return false;
    const SimEvent head = asRecorded(block.head);
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
  const Bytes stop_above_;
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
  while (!walk.stopped()) {
    // A whole block of recorded events when the plan's next event and the
    // limit are past the recorded event after it.
    if (r % kBlock == 0 && r + kBlock < recorded.size()) {
      const SimEvent after = asRecorded(recorded.block(r / kBlock + 1).head);
      if ((all || after.time < limit) && (p >= plan.size() || !before(plan[p], after)) &&
          walk.addBlock(recorded, r)) {
        r += kBlock;
        continue;
      }
    }
    const SimEvent next = r >= recorded.size() ? SimEvent{}
                          : asRecorded(r % kBlock == 0 ? recorded.block(r / kBlock).head : recorded[r]);
    bool have_r = r < recorded.size() && (all || next.time < limit);
    bool have_p = p < plan.size() && (all || plan[p].time < limit);
    if (!have_r && !have_p) return;
    if (have_r && (!have_p || !before(plan[p], next))) {
      walk.add(next);
      ++r;
      recorded.prefetch(r + RecordedEvents::kPrefetch);
    } else {
      // The plan's events up to the recorded one, at once: no block can be
      // passed meanwhile (the recorded event after a block is not before `next`).
      do walk.add(plan[p++]);
      while (p < plan.size() && (all || plan[p].time < limit) && (!have_r || before(plan[p], next)));
    }
  }
}

// walkUntil with the allocator model: the recorded events (each with its
// allocation, in `recorded`, sorted once) and the plan's merged as they are
// walked, the recorded first where neither is before the other.
void walkWithSources(Walk& walk, const std::vector<SimEvent>& recorded, size_t& r, const std::vector<SimEvent>& plan,
                     size_t& p, Ns limit, bool all) {
  while (!walk.stopped()) {
    const bool have_r = r < recorded.size() && (all || recorded[r].time < limit);
    const bool have_p = p < plan.size() && (all || plan[p].time < limit);
    if (!have_r && !have_p) return;
    if (have_r && (!have_p || !before(plan[p], recorded[r])))
      walk.add(recorded[r++]);
    else
      walk.add(plan[p++]);
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
  // With the allocator model the recorded events go into `sourced` instead.
  const bool with_sources = options.allocator != nullptr;
  // With the allocator model, the recorded events to walk are none (own,
  // of no allocation).
  static const std::vector<Allocation> no_rows;
  std::optional<RecordedEvents> own;
  if (!options.recorded || with_sources) own.emplace(with_sources ? no_rows : trace.allocations, filter);
  const RecordedEvents& recorded = options.recorded && !with_sources ? *options.recorded : *own;
  // The recorded events with their allocations (allocator model only),
  // walked from `rs` on, and the plan's events not walked yet.
  std::vector<SimEvent> sourced = with_sources ? recordedWithAllocations(trace, filter) : std::vector<SimEvent>{};
  sortInTimeOrder(sourced);
  size_t rs = 0;
  std::vector<SimEvent> ev;
  bool in_order = true;  // ev in before() order: each step's events are appended sorted
  std::vector<Ns> step_cost(layout.steps.size(), 0);
  // An empty plan makes no events: no context to make then.
  std::optional<PlanContext> own_context;
  if (!options.context && !plan.empty()) own_context.emplace(trace, filter, layout);
  const PlanContext* ctx = options.context ? options.context : own_context ? &*own_context : nullptr;
  StepEvents made;
  const std::vector<Ns> earliest = earliestFromStep(layout);
  Walk walk(sim, options, trace);
  size_t r = 0, p = 0;
  Ns walked = LLONG_MIN;  // every event before it is walked
  size_t events = 0;
  for (size_t si = 0; si < layout.steps.size(); ++si) {
    const StepLayout& step = layout.steps[si];
    if (!step.complete || plan.empty()) continue;
    if (streaming && earliest[si] > walked) {
      if (!in_order) sortInTimeOrder(ev);
      in_order = true;
      p = 0;
      if (with_sources)
        walkWithSources(walk, sourced, rs, ev, p, earliest[si], false);
      else
        walkUntil(walk, recorded, r, ev, p, earliest[si], false);
      events += p;
      ev.erase(ev.begin(), ev.begin() + static_cast<std::ptrdiff_t>(p));
      walked = earliest[si];
      // Past options.stop_above: the later steps could only check that none
      // of their events goes before what was walked, and by earliestEvent
      // none does.
      if (walk.stopped()) {
        sim.stopped = true;
        return true;
      }
    }
    const size_t before_step = ev.size();
    StepRegions reg(step);
    holdArguments(*ctx, step, plan, made);
    for (const Segment& seg : plan) sat::addTo(step_cost[si], applySegment(*ctx, step, si, reg, seg, made));
    // The step's events come sorted: merged in where they fall among the
    // plan's not walked yet, not all sorted again at the next step.
    if (!made.appendSorted(ev) && in_order)
      std::inplace_merge(ev.begin(), ev.begin() + static_cast<std::ptrdiff_t>(before_step), ev.end(),
                         [](const SimEvent& x, const SimEvent& y) { return before(x, y); });
    for (size_t i = before_step; i < ev.size(); ++i)
      if (ev[i].time < walked) return false;  // too late: walked past it
    sat::addTo(sim.total_recompute_ns, step_cost[si]);
    ++sim.steps_applied;
  }
  if (!in_order) sortInTimeOrder(ev);
  p = 0;
  if (with_sources)
    walkWithSources(walk, sourced, rs, ev, p, 0, true);
  else
    walkUntil(walk, recorded, r, ev, p, 0, true);
  walk.finish();
  sim.stopped = walk.stopped();
  if (sim.stopped) return true;
  sim.events = events + ev.size() + recorded.size() + sourced.size();

  if (options.want_curve && options.max_curve_points > 0)
    sim.curve = downsample(sim.curve, options.max_curve_points);

  sim.step_bounds = shiftedStepBounds(layout, step_cost);
  // The plan's recompute as the solvers price it: per segment the median
  // over the steady steps of each unit's (and inner gap's) cost, summed
  // (chain/recompute_cost.h), not the median of each step's total.
  if (sim.steps_applied > 0)
    for (const Segment& seg : plan)
      sat::addTo(sim.recompute_ns, segmentRecomputeNs(layout, ctx->ops, seg.first, seg.last,
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
