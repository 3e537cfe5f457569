#include "chain/unit_chain.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

#include "advice_error.h"
#include "memory/cache_allocations.h"
#include "chain/checkpointed_forward.h"
#include "chain/in_place_outputs.h"
#include "chain/reentrant_holds.h"
#include "chain/checkpoint_arguments.h"
#include "chain/drop_buckets.h"
#include "chain/region_maxima.h"
#include "median.h"
#include "memory/memory_events.h"
#include "units/op_table.h"
#include "chain/recompute_cost.h"
#include "chain/selective_replay_peak.h"
#include "units/step_regions.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

void raise(Bytes& slot, Bytes v) { slot = std::max(slot, v); }

// raise(), keeping the value as one of the slot's moments (unit_chain.h)
// unless `moments` is null (not kept: only the what-if reads them).
void raise(Bytes& slot, std::vector<Bytes>* moments, Bytes v) {
  if (moments) moments->push_back(std::max<Bytes>(0, v));
  raise(slot, v);
}

// raise() with a region's moment, keeping its instants beside it unless
// `instants` is null; `extra` is added to the moment and to each of its
// instants (skipCredit).
void raise(Bytes& slot, std::vector<Bytes>* moments, std::vector<std::vector<Bytes>>* instants, Bytes v,
           const std::vector<Bytes>& region_instants, Bytes extra) {
  raise(slot, moments, sat::add(v, extra));
  if (!instants) return;
  instants->push_back(region_instants);
  for (Bytes& b : instants->back()) b = std::max<Bytes>(0, sat::add(b, extra));
}

// The steps the chain is an envelope of: the complete ones, in time order.
std::vector<const StepLayout*> completeSteps(const RunLayout& layout) {
  std::vector<const StepLayout*> steps;
  for (const StepLayout& s : layout.steps)
    if (s.complete) steps.push_back(&s);
  if (steps.empty()) {
    std::string why = layout.steps.empty() ? "no steps" : layout.steps.front().problem;
    throw AdviceError("no step has all units' forward and backward in chain order (step " +
                      std::to_string(layout.steps.empty() ? -1 : layout.steps.front().step) +
                      ": " + why + "); choose other units with --units");
  }
  std::sort(steps.begin(), steps.end(),
            [](const StepLayout* a, const StepLayout* b) { return a->start < b->start; });
  return steps;
}

// What a checkpoint of each unit holds beyond its forward, at its worst
// step: its arguments, and under a reentrant checkpoint its output and the
// output's gradient. Returns, per step, when the recorded run had freed the
// last of the arguments held (ArgumentHolds::freed, the latest over the units).
std::vector<Ns> measureHolds(UnitChain& c, const Trace& trace, const AllocationFilter& filter,
                             const std::vector<const StepLayout*>& steps, int n) {
  c.held_arguments.assign(n, 0);
  c.untold_arguments = 0;
  std::vector<Ns> freed(steps.size(), -1);
  for (size_t si = 0; si < steps.size(); ++si)
    for (int k = 0; k < n; ++k) {
      ArgumentHolds h = argumentHolds(trace, filter, *steps[si], k);
      c.held_arguments[k] = std::max(c.held_arguments[k], h.held);
      c.untold_arguments = std::max(c.untold_arguments, h.untold);
      freed[si] = std::max(freed[si], h.freed);
    }
  c.reentrant_held.assign(n, 0);
  if (!reentrantCheckpoint(trace)) return freed;
  for (const StepLayout* s : steps) {
    for (int k = 0; k < n; ++k) {
      ReentrantHolds h = reentrantHolds(trace, filter, *s, k, k);
      Bytes b = sat::add(h.output_grad ? h.output_grad->bytes : 0, h.output ? h.output->bytes : 0);
      c.reentrant_held[k] = std::max(c.reentrant_held[k], b);
    }
  }
  return freed;
}

// The envelope's slots, at zero; their moments only when kept.
void sizeEnvelope(UnitChain& c, int n, bool moments) {
  c.unit_peak.assign(n, 0);
  c.gap_peak.assign(n, 0);
  c.before_backward.assign(n, 0);
  c.born_kept.assign(2 * n - 1, 0);
  c.born_peak.assign(2 * n - 1, 0);
  c.backward_peak.assign(n, 0);
  c.forward_peak.assign(n, 0);
  c.checkpointed_forward_peak.assign(n, 0);
  if (!moments) return;
  c.unit_peak_moments.assign(n, {});
  c.backward_peak_moments.assign(n, {});
  c.gap_peak_moments.assign(n, {});
  c.unit_peak_instants.assign(n, {});
  c.backward_peak_instants.assign(n, {});
  c.gap_peak_instants.assign(n, {});
  c.before_backward_moments.assign(n, {});
  c.born_kept_moments.assign(2 * n - 1, {});
  c.born_peak_moments.assign(2 * n - 1, {});
}

// What the envelope reads of one complete step.
struct StepMeasures {
  const StepLayout& step;
  const StepRegions& reg;
  const std::vector<Bytes>& maxima;                  // per region
  const std::vector<std::vector<Bytes>>& instants;   // per region; empty when not kept
  const std::vector<Bytes>& entering;                // per region
  const BornStats& born;
  const std::vector<Bytes>& credit;                  // skipCredit, by unit position
};

// The forward of a checkpointed unit, recomputed: probes the trace for it.
struct ForwardProbes {
  const CheckpointedForward& early;
  const InPlaceOutputs& inplace;
  LevelBefore& level;
};

// Raises the envelope by one step's regions, each moment by what the step
// lacks of the chain's drops there (skipCredit).
void raiseByStep(UnitChain& c, const Trace& trace, const AllocationFilter& filter, ForwardProbes& probes,
                 const StepMeasures& m, bool moments) {
  int n = static_cast<int>(c.names.size());
  static const std::vector<Bytes> no_instants;
  // Entry i of one of the moment lists, or null when they are not kept.
  auto kept = [moments](auto& per_entry, int i) { return moments ? &per_entry[i] : nullptr; };
  auto at = [&](int r) -> const std::vector<Bytes>& { return moments ? m.instants[r] : no_instants; };
  const StepRegions& reg = m.reg;
  const std::vector<Bytes>& mx = m.maxima;
  for (int k = 0; k < n; ++k) {
    Bytes in = m.credit[k], after = m.credit[k + 1];  // at unit k's moments; after it
    std::vector<Bytes>* unit_moments = kept(c.unit_peak_moments, k);
    std::vector<std::vector<Bytes>>* unit_instants = kept(c.unit_peak_instants, k);
    raise(c.unit_peak[k], unit_moments, unit_instants, mx[reg.forward(k)], at(reg.forward(k)), in);
    raise(c.unit_peak[k], unit_moments, unit_instants, mx[reg.backward(k)], at(reg.backward(k)), in);
    c.forward_peak[k] = std::max(c.forward_peak[k], sat::add(mx[reg.forward(k)], in));
    Bytes ck = checkpointedForwardPeak(trace, filter, probes.early, probes.inplace, probes.level, m.step, reg, k, {});
    c.checkpointed_forward_peak[k] =
        std::max(c.checkpointed_forward_peak[k], sat::add(ck >= 0 ? ck : mx[reg.forward(k)], in));
    raise(c.backward_peak[k], kept(c.backward_peak_moments, k), kept(c.backward_peak_instants, k),
          mx[reg.backward(k)], at(reg.backward(k)), in);
    std::vector<Bytes>* gap_moments = kept(c.gap_peak_moments, k);
    std::vector<std::vector<Bytes>>* gap_instants = kept(c.gap_peak_instants, k);
    raise(c.gap_peak[k], gap_moments, gap_instants, mx[reg.forwardGap(k)], at(reg.forwardGap(k)), after);
    if (k + 1 < n)
      raise(c.gap_peak[k], gap_moments, gap_instants, mx[reg.backwardGap(k + 1)], at(reg.backwardGap(k + 1)),
            after);
    raise(c.before_backward[k], kept(c.before_backward_moments, k), sat::add(m.entering[reg.backward(k)], after));
  }
  for (int p = 0; p < 2 * n - 1; ++p) {
    raise(c.born_kept[p], kept(c.born_kept_moments, p), m.born.kept[p]);
    raise(c.born_peak[p], kept(c.born_peak_moments, p), m.born.peak[p]);
  }
}

// Each bucket filed under the last unit of the segments that drop it.
void fileDrops(UnitChain& c, const std::map<std::pair<int, int>, Bytes>& drop_min, int n) {
  c.drops.assign(n, {});
  c.saved.assign(n, 0);
  for (const auto& [key, bytes] : drop_min) {
    c.drops[key.second].push_back({key.first, bytes});
    if (key.first == key.second) sat::addTo(c.saved[key.first], bytes);
  }
}

// Recompute as the simulator prices it (recompute_cost.h), and the step
// time, from the steady steps.
void priceRecompute(UnitChain& c, const Trace& trace, const RunLayout& layout, int n) {
  c.forward_ns.assign(n, 0);
  c.gap_ns.assign(n, 0);
  OpIndex no_calls_kept(trace);
  for (int k = 0; k < n; ++k) {
    c.forward_ns[k] = unitRecomputeNs(layout, no_calls_kept, k);
    if (k + 1 < n) c.gap_ns[k] = gapRecomputeNs(layout, k);
  }
  std::vector<Ns> durations;
  for (size_t i : layout.steady) durations.push_back(sat::sub(layout.steps[i].end, layout.steps[i].start));
  c.step_ns = median(durations);
  c.steady_step = layout.steady.empty() ? -1 : layout.steps[layout.steady.front()].step;
}

// The last gap from where the recorded run had freed the checkpoints'
// arguments on (`arguments_freed`, per step: measureHolds), each step's
// highest level: a checkpoint holds them there (chain_peak.cpp).
void measureMidAfterArguments(UnitChain& c, const std::vector<const StepLayout*>& steps,
                              const std::vector<Ns>& arguments_freed, const RecordedEvents& events,
                              LevelBefore& level, const std::vector<BornStats>& born,
                              const std::map<std::pair<int, int>, Bytes>& drop_min, int n) {
  c.mid_after_arguments_moments.clear();
  for (size_t si = 0; si < steps.size(); ++si) {
    const StepLayout* s = steps[si];
    const Ns freed = arguments_freed[si];
    Bytes most = 0;
    if (freed >= 0) {
      Ns from = std::max(freed, s->units.back().fwd_end), to = s->units.back().bwd_start;
      // The level after `from`, then after each later instant before `to`.
      size_t i = events.firstAfter(from);
      Bytes live = level.at(i);
      most = live;
      for (; i < events.size() && events.time(i) < to; ++i) {
        const MemoryEvent e = events[i];
        sat::addTo(live, e.delta);
        if (i + 1 == events.size() || events.time(i + 1) != e.time) most = std::max(most, live);
      }
      sat::addTo(most, skipCredit(*s, born[si], drop_min, n)[n]);  // the last gap: after every unit
    }
    raise(c.mid_after_arguments, &c.mid_after_arguments_moments, most);
  }
}

}  // namespace

Ns UnitChain::recomputeNs(int first, int last) const {
  Ns t = 0;
  for (int k = first; k <= last; ++k) t = sat::add(t, sat::add(forward_ns[k], k < last ? gap_ns[k] : 0));
  return t;
}

Bytes UnitChain::droppedBytes(int first, int last) const {
  Bytes d = 0;
  for (int j = first; j <= last; ++j)
    for (const DropBucket& b : drops[j])
      if (b.first >= first) sat::addTo(d, b.bytes);
  return d;
}

UnitChain buildUnitChain(const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const std::vector<std::string>& names,
                         const RecordedEvents* recorded, bool moments) {
  std::vector<const StepLayout*> steps = completeSteps(layout);
  int n = static_cast<int>(names.size());
  std::vector<StepRegions> regions;
  for (const StepLayout* s : steps) regions.emplace_back(*s);

  UnitChain c;
  c.names = names;
  c.complete_steps = steps.size();
  std::vector<std::vector<Bytes>> entering;
  std::optional<RecordedEvents> own;
  if (!recorded) own.emplace(trace.allocations, filter);
  const RecordedEvents& events = recorded ? *recorded : *own;
  LevelBefore level(events);  // asked step after step, in time order
  RegionMaxima maxima = regionMaxima(trace, events, steps, regions, entering, moments);
  c.outside = std::max<Bytes>(0, maxima.outside);
  c.outside_where = maxima.outside_where;
  const std::vector<Ns> arguments_freed = measureHolds(c, trace, filter, steps, n);
  sizeEnvelope(c, n, moments);
  CheckpointedForward early(trace, filter);
  InPlaceOutputs inplace(trace, filter);
  std::vector<BornStats> born;
  for (size_t s = 0; s < steps.size(); ++s) born.push_back(bornStats(trace, filter, *steps[s], regions[s], inplace));
  std::map<std::pair<int, int>, Bytes> drop_min = smallestDrops(steps, born);
  ForwardProbes probes{early, inplace, level};
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<Bytes> credit = skipCredit(*steps[s], born[s], drop_min, n);
    StepMeasures m{*steps[s], regions[s], maxima.per_step[s], maxima.instants[s], entering[s], born[s], credit};
    raiseByStep(c, trace, filter, probes, m, moments);
  }
  fileDrops(c, drop_min, n);
  priceRecompute(c, trace, layout, n);
  // From the events: a curve of every instant is two points per allocation more.
  c.baseline_peak = events.peak();
  if (!layout.steady.empty())
    c.persistent = level.at(events.firstAfter(sat::sub(layout.steps[layout.steady.front()].start, 1)));
  measureMidAfterArguments(c, steps, arguments_freed, events, level, born, drop_min, n);
  return c;
}

void addSelectiveOptions(UnitChain& chain, const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const RecordedEvents* recorded) {
  std::vector<std::vector<UnitOp>> ops = unitOps(trace, filter, layout);
  chain.selective.assign(chain.names.size(), {});
  bool any = false;
  for (size_t k = 0; k < chain.names.size() && k < ops.size(); ++k) {
    chain.selective[k] = selectiveOptions(ops[k], chain.saved[k]);
    any = any || !chain.selective[k].empty();
  }
  if (!any) {
    chain.selective.clear();
    return;
  }
  std::vector<std::vector<std::string>> free_at_peak = callsBeforeReplayPeak(ops, chain.saved, trace, filter, layout);
  for (size_t k = 0; k < chain.selective.size() && k < free_at_peak.size(); ++k)
    addOption(chain.selective[k], optionOfCalls("alive at its replay's peak", ops[k], free_at_peak[k]),
              chain.saved[k]);
  // Each save-list's recompute as the simulator prices it: the median of
  // each step's unit time less its kept calls' times, not the sum of the
  // calls' medians, plus selective checkpointing's own dispatch
  // (recompute_cost.h). Below 0 when that dispatch costs more than the
  // calls it keeps save: the save-list is then slower than the whole unit.
  OpIndex index(trace);
  for (size_t k = 0; k < chain.selective.size(); ++k)
    for (SelectiveOption& o : chain.selective[k])
      o.saved_ns = sat::sub(chain.forward_ns[k], unitRecomputeNs(layout, index, static_cast<int>(k), o.save));
  measureReplayPeaks(chain.selective, trace, filter, layout);
  measureForwardPeaks(chain, trace, filter, layout, recorded);
}

void measureForwardPeaks(UnitChain& chain, const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const RecordedEvents* recorded) {
  CheckpointedForward early(trace, filter);
  InPlaceOutputs inplace(trace, filter);
  OpIndex index(trace);
  std::optional<RecordedEvents> own;
  if (!recorded) own.emplace(trace.allocations, filter);
  const RecordedEvents& events = recorded ? *recorded : *own;
  LevelBefore level(events);  // asked step after step, in time order
  for (std::vector<SelectiveOption>& unit : chain.selective)
    for (SelectiveOption& o : unit) o.forward_peak = o.lingering_priced ? 0 : -1;
  for (const StepLayout& step : layout.steps) {
    if (!step.complete) continue;
    StepRegions reg(step);
    for (size_t k = 0; k < step.units.size() && k < chain.selective.size(); ++k) {
      std::vector<OpCall> calls = index.within(step.units[k].fwd_start, step.units[k].fwd_end);
      for (SelectiveOption& o : chain.selective[k]) {
        if (o.forward_peak < 0) continue;
        Bytes v = checkpointedForwardPeak(trace, filter, early, inplace, level, step, reg, static_cast<int>(k),
                                          savedCalls(calls, o.save));
        o.forward_peak = std::max(o.forward_peak, v >= 0 ? v : chain.forward_peak[k]);
      }
    }
  }
}

Bytes UnitChain::checkpointedUnitPeak(int k, int first, int last, int option) const {
  size_t n = names.size();
  if (checkpointed_forward_peak.size() != n || backward_peak.size() != n) return unit_peak[k];
  Bytes fwd = checkpointed_forward_peak[k];
  if (option > 0) {
    const SelectiveOption& o = selective.at(k).at(option - 1);
    fwd = first == last && o.forward_peak >= 0 ? o.forward_peak : forward_peak[k];
  }
  return std::max(fwd, backward_peak[k]);
}

}  // namespace gcprof::advisor
