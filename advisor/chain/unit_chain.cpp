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

// The local maxima of one region's live-bytes curve, in time order: the
// entry level and the level after each instant's events, a value kept when
// the next is lower or the region ends. Whichever is highest at one size
// may not be at another (UnitChain::*_instants).
class RegionInstants {
 public:
  void add(Bytes v) {
    if (started_ && v < last_ && rising_) maxima_.push_back(last_);
    if (!started_ || v > last_) rising_ = true;
    if (v < last_) rising_ = false;
    started_ = true;
    last_ = v;
  }
  std::vector<Bytes> finish() {
    if (started_ && rising_) maxima_.push_back(last_);
    started_ = false;
    return std::move(maxima_);
  }

 private:
  std::vector<Bytes> maxima_;
  Bytes last_ = 0;
  bool started_ = false, rising_ = false;
};

// Live-byte maxima of the regions of every complete step, entry levels included.
struct RegionMaxima {
  std::vector<std::vector<Bytes>> per_step;  // [complete step][region]
  // [complete step][region]: RegionInstants; empty regions when not kept
  // (a local maximum per allocation cycle: hundreds of MB on a big run).
  std::vector<std::vector<std::vector<Bytes>>> instants;
  Bytes outside = 0;
  std::string outside_where = "nowhere (no memory recorded)";
};

RegionMaxima regionMaxima(const Trace& trace, const RecordedEvents& events,
                          const std::vector<const StepLayout*>& steps,
                          const std::vector<StepRegions>& regions,
                          std::vector<std::vector<Bytes>>& entering, bool keep_instants) {
  RegionMaxima m;
  m.per_step.resize(steps.size());
  m.instants.resize(steps.size());
  entering.resize(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    m.per_step[s].assign(regions[s].count(), LLONG_MIN);
    m.instants[s].assign(regions[s].count(), {});
    entering[s].assign(regions[s].count(), 0);
  }
  std::vector<RegionInstants> open;  // the current step's regions
  Bytes live = 0;
  size_t s = 0;       // current complete step
  int cur = -1;       // last region of step s entered so far
  auto noteOutside = [&](Ns t) {
    if (live <= m.outside && m.outside > 0) return;
    m.outside = live;
    m.outside_where = "outside the recorded steps (set-up, parameters)";
    for (size_t q = 0; q < steps.size(); ++q) {
      if (t < steps[q]->start || t > steps[q]->end) continue;
      m.outside_where = t < regions[q].begin()
                            ? "before the first unit's forward (inputs, embeddings)"
                            : "after the first unit's backward (optimizer step, gradients)";
      return;
    }
    for (const Step& st : trace.steps)
      if (t >= st.start && t <= st.end) m.outside_where = "in a step whose units were not all recorded";
  };
  // Enter every region of step s up to `r` at the current level.
  auto enterUpTo = [&](int r) {
    if (cur < 0) open.assign(regions[s].count(), {});
    for (int q = cur + 1; q <= r; ++q) {
      if (q > 0) m.instants[s][q - 1] = open[q - 1].finish();
      entering[s][q] = live;
      raise(m.per_step[s][q], live);
      if (keep_instants) open[q].add(live);
    }
    cur = std::max(cur, r);
  };
  auto leaveStep = [&] {
    enterUpTo(regions[s].count() - 1);
    m.instants[s][cur] = open[cur].finish();
    ++s;
    cur = -1;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const MemoryEvent e = events[i];
    Ns t = e.time;
    while (s < steps.size() && t > regions[s].end()) leaveStep();
    int r = s < steps.size() ? regions[s].regionOf(t) : StepRegions::kOutside;
    if (r != StepRegions::kOutside) enterUpTo(r);
    sat::addTo(live, e.delta);
    bool last_at_time = i + 1 == events.size() || events.time(i + 1) != t;
    if (!last_at_time) continue;
    if (r == StepRegions::kOutside)
      noteOutside(t);
    else {
      raise(m.per_step[s][r], live);
      if (keep_instants) open[r].add(live);
    }
  }
  while (s < steps.size()) leaveStep();
  return m;
}

// Born-in-position and drop-bucket bookkeeping for one complete step.
struct BornStats {
  std::vector<Bytes> kept, peak;
  std::map<std::pair<int, int>, Bytes> buckets;  // (first unit, last unit) -> bytes
};

// A unit's output that the trace frees in the unit's own backward (it saved
// its own result, chain/in_place_outputs.h) is held by its consumer when the
// unit ends a checkpoint: only a checkpoint that also holds the next unit
// drops it, so it goes to the bucket (k, k + 1), as the simulator prices it.
BornStats bornStats(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                    const StepRegions& reg, const InPlaceOutputs& inplace) {
  int n = reg.units();
  std::vector<const Allocation*> outputs(n);
  const bool reentrant = reentrantCheckpoint(trace);
  for (int k = 0; k < n; ++k) {
    outputs[k] = inplace.output(step, reg, k);
    if (!outputs[k] && reentrant) outputs[k] = reentrantHolds(trace, filter, step, k, k).output;
  }
  BornStats b;
  b.kept.assign(2 * n - 1, 0);
  b.peak.assign(2 * n - 1, 0);
  std::vector<std::vector<MemoryEvent>> local(2 * n - 1);
  auto first = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), reg.begin(),
                                [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (auto it = first; it != trace.allocations.end() && it->alloc <= reg.end(); ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || (a.freed() && a.free <= a.alloc) || keptByTheLibrary(a)) continue;
    int p = reg.regionOf(a.alloc);
    if (!reg.isForwardPosition(p)) continue;
    int fr = a.freed() ? reg.regionOf(a.free) : StepRegions::kOutside;
    if (fr == p) {
      local[p].push_back({a.alloc, a.bytes});
      local[p].push_back({a.free, -a.bytes});
      continue;
    }
    local[p].push_back({a.alloc, a.bytes});
    sat::addTo(b.kept[p], a.bytes);
    int q = reg.backwardPosition(fr);
    if (q < 0) continue;
    if (p == q && p % 2 == 0 && &a == outputs[p / 2]) {
      if (p / 2 + 1 >= n) continue;  // the last unit's output: no checkpoint drops it
      q = p + 2;
    }
    int lo = std::min(p, q), hi = std::max(p, q);
    sat::addTo(b.buckets[{lo / 2, (hi + 1) / 2}], a.bytes);
  }
  for (size_t p = 0; p < local.size(); ++p) b.peak[p] = eventsPeak(local[p]);
  return b;
}

bool ranAll(const StepLayout& step, int first, int last) {
  for (int k = first; k <= last; ++k)
    if (step.units[k].skipped) return false;
  return true;
}

// The drop a plan can count on for each bucket (first, last): the smallest
// that the steps in which all its units ran show. A step that skipped one
// of them (LayerDrop, step_layout.h) has nothing of it to drop, and none of
// its memory either; skipCredit makes up for it.
std::map<std::pair<int, int>, Bytes> smallestDrops(const std::vector<const StepLayout*>& steps,
                                                   const std::vector<BornStats>& born) {
  std::map<std::pair<int, int>, Bytes> out;
  for (const BornStats& b : born)
    for (const auto& [key, bytes] : b.buckets) out.emplace(key, LLONG_MAX);
  for (auto it = out.begin(); it != out.end();) {
    for (size_t s = 0; s < steps.size(); ++s) {
      if (!ranAll(*steps[s], it->first.first, it->first.second)) continue;
      auto f = born[s].buckets.find(it->first);
      it->second = std::min(it->second, f == born[s].buckets.end() ? 0 : f->second);
    }
    it = it->second > 0 && it->second < LLONG_MAX ? std::next(it) : out.erase(it);
  }
  return out;
}

// What one step lacks of the drops the chain counts on, by unit position:
// credit[k] bounds what a plan's segments that end before unit k drop, by
// the chain's count, beyond what they drop in this step; the chain
// subtracts exactly those drops from the moments at k, so the step's
// moments there, raised by credit[k], stay at least what the simulator
// finds in it under any plan. 0 in a step where every unit ran (it drops
// at least the chain's count of every bucket). Where LayerDrop skipped a
// unit, the step lacks that unit's drops but also the memory they are, so
// it is priced as if the unit had held there what it drops in the steps it
// ran in: near the level of those steps, which the envelope has anyway.
// The step's own buckets that the chain does not count (the output of the
// unit before the skipped one, read by the one after it: (k-1, k+1)) are
// dropped by every segment that drops the chain's (k-1, k) and (k, k+1)
// there, so the bound is the most over all plans of the lacking bytes of
// their segments, a longest-path over the unit positions, not their sum.
std::vector<Bytes> skipCredit(const StepLayout& step, const BornStats& b,
                              const std::map<std::pair<int, int>, Bytes>& drops, int n) {
  std::vector<Bytes> credit(n + 1, 0);
  if (std::none_of(step.units.begin(), step.units.end(), [](const UnitWindow& u) { return u.skipped; }))
    return credit;
  // lacking[f][l]: the chain's bytes of bucket (f, l) less the step's.
  std::vector<std::vector<Bytes>> lacking(n, std::vector<Bytes>(n, 0));
  for (const auto& [key, bytes] : b.buckets) lacking[key.first][key.second] = sat::sub(0, bytes);
  for (const auto& [key, bytes] : drops) sat::addTo(lacking[key.first][key.second], bytes);
  // credit[l + 1]: the most over plans of units 0..l, the last segment
  // [i..l] or none. row[i]: the lacking bytes of buckets (i, t <= l).
  std::vector<Bytes> row(n, 0);
  for (int l = 0; l < n; ++l) {
    credit[l + 1] = credit[l];
    Bytes inside = 0;  // of the buckets inside [i..l]
    for (int i = l; i >= 0; --i) {
      sat::addTo(row[i], lacking[i][l]);
      sat::addTo(inside, row[i]);
      credit[l + 1] = std::max(credit[l + 1], sat::add(credit[i], inside));
    }
  }
  return credit;
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
  c.held_arguments.assign(n, 0);
  for (const StepLayout* s : steps)
    for (int k = 0; k < n; ++k)
      c.held_arguments[k] = std::max(c.held_arguments[k], heldArgumentBytes(trace, filter, *s, k));
  c.reentrant_held.assign(n, 0);
  if (reentrantCheckpoint(trace)) {
    for (const StepLayout* s : steps) {
      for (int k = 0; k < n; ++k) {
        ReentrantHolds h = reentrantHolds(trace, filter, *s, k, k);
        Bytes b = sat::add(h.output_grad ? h.output_grad->bytes : 0, h.output ? h.output->bytes : 0);
        c.reentrant_held[k] = std::max(c.reentrant_held[k], b);
      }
    }
  }
  c.unit_peak.assign(n, 0);
  c.gap_peak.assign(n, 0);
  c.before_backward.assign(n, 0);
  c.born_kept.assign(2 * n - 1, 0);
  c.born_peak.assign(2 * n - 1, 0);
  c.backward_peak.assign(n, 0);
  if (moments) {
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
  // Entry i of one of those, or null when they are not kept.
  auto kept = [moments](auto& per_entry, int i) { return moments ? &per_entry[i] : nullptr; };
  static const std::vector<Bytes> no_instants;
  c.forward_peak.assign(n, 0);
  c.checkpointed_forward_peak.assign(n, 0);
  CheckpointedForward early(trace, filter);
  InPlaceOutputs inplace(trace, filter);
  std::vector<BornStats> born;
  for (size_t s = 0; s < steps.size(); ++s) born.push_back(bornStats(trace, filter, *steps[s], regions[s], inplace));
  std::map<std::pair<int, int>, Bytes> drop_min = smallestDrops(steps, born);
  for (size_t s = 0; s < steps.size(); ++s) {
    const StepRegions& reg = regions[s];
    const std::vector<Bytes>& mx = maxima.per_step[s];
    std::vector<Bytes> credit = skipCredit(*steps[s], born[s], drop_min, n);
    // Region r's instants in this step (none when they are not kept).
    auto at = [&](int r) -> const std::vector<Bytes>& { return moments ? maxima.instants[s][r] : no_instants; };
    for (int k = 0; k < n; ++k) {
      Bytes in = credit[k], after = credit[k + 1];  // at unit k's moments; after it
      std::vector<Bytes>* unit_moments = kept(c.unit_peak_moments, k);
      std::vector<std::vector<Bytes>>* unit_instants = kept(c.unit_peak_instants, k);
      raise(c.unit_peak[k], unit_moments, unit_instants, mx[reg.forward(k)], at(reg.forward(k)), in);
      raise(c.unit_peak[k], unit_moments, unit_instants, mx[reg.backward(k)], at(reg.backward(k)), in);
      c.forward_peak[k] = std::max(c.forward_peak[k], sat::add(mx[reg.forward(k)], in));
      Bytes ck = checkpointedForwardPeak(trace, filter, early, inplace, level, *steps[s], reg, k, {});
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
      raise(c.before_backward[k], kept(c.before_backward_moments, k),
            sat::add(entering[s][reg.backward(k)], after));
    }
    for (int p = 0; p < 2 * n - 1; ++p) {
      raise(c.born_kept[p], kept(c.born_kept_moments, p), born[s].kept[p]);
      raise(c.born_peak[p], kept(c.born_peak_moments, p), born[s].peak[p]);
    }
  }
  c.drops.assign(n, {});
  c.saved.assign(n, 0);
  for (const auto& [key, bytes] : drop_min) {
    c.drops[key.second].push_back({key.first, bytes});
    if (key.first == key.second) sat::addTo(c.saved[key.first], bytes);
  }

  // Times from the steady steps.
  std::vector<const StepLayout*> steady;
  for (size_t i : layout.steady) steady.push_back(&layout.steps[i]);
  // Recompute as the simulator prices it (recompute_cost.h).
  c.forward_ns.assign(n, 0);
  c.gap_ns.assign(n, 0);
  OpIndex no_calls_kept(trace);
  for (int k = 0; k < n; ++k) {
    c.forward_ns[k] = unitRecomputeNs(layout, no_calls_kept, k);
    if (k + 1 < n) c.gap_ns[k] = gapRecomputeNs(layout, k);
  }
  std::vector<Ns> durations;
  for (const StepLayout* s : steady) durations.push_back(sat::sub(s->end, s->start));
  c.step_ns = median(durations);
  c.steady_step = steady.empty() ? -1 : steady.front()->step;
  // From the events: a curve of every instant is two points per allocation more.
  c.baseline_peak = sortedEventsPeak(events);
  if (!steady.empty()) {
    c.persistent = level.at(events.firstAfter(sat::sub(steady.front()->start, 1)));
  }
  // The last gap from where the recorded run had freed the checkpoints'
  // arguments on: a checkpoint holds them there (chain_peak.cpp).
  c.mid_after_arguments_moments.clear();
  for (size_t si = 0; si < steps.size(); ++si) {
    const StepLayout* s = steps[si];
    Ns freed = -1;
    for (int k = 0; k < n; ++k) freed = std::max(freed, heldArgumentsFreed(trace, filter, *s, k));
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
  // calls' medians (recompute_cost.h).
  OpIndex index(trace);
  for (size_t k = 0; k < chain.selective.size(); ++k)
    for (SelectiveOption& o : chain.selective[k])
      o.saved_ns = std::max<Ns>(0, chain.forward_ns[k] - unitRecomputeNs(layout, index, static_cast<int>(k), o.save));
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
    for (SelectiveOption& o : unit) o.forward_peak = o.lingers() ? -1 : 0;
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
