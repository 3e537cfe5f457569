#include "chain/selective_replay_peak.h"

#include <algorithm>

#include "memory/cache_allocations.h"
#include "memory/memory_events.h"
#include "units/op_table.h"
#include "units/step_regions.h"

namespace gcprof::advisor {
namespace {

struct Born {
  const Allocation* a;
  bool freed_inside;  // freed within the same forward: the replay frees it there too
};

// F_k's allocations (unit k's forward window in `step`), with the same
// filter the chain's born_peak uses.
std::vector<Born> bornInForward(const Trace& trace, const AllocationFilter& filter, const UnitWindow& u,
                                const StepRegions& reg, int k) {
  std::vector<Born> born;
  int p = StepRegions::forward(k);
  auto it = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), u.fwd_start,
                             [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (; it != trace.allocations.end() && it->alloc <= u.fwd_end; ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || (a.freed() && a.free <= a.alloc) || keptByTheLibrary(a)) continue;
    if (reg.regionOf(a.alloc) != p) continue;
    born.push_back({&a, a.freed() && reg.regionOf(a.free) == p});
  }
  return born;
}

}  // namespace

std::vector<std::vector<std::string>> callsBeforeReplayPeak(const std::vector<std::vector<UnitOp>>& ops,
                                                            const std::vector<Bytes>& dropped,
                                                            const Trace& trace, const AllocationFilter& filter,
                                                            const RunLayout& layout) {
  std::vector<std::vector<std::string>> out(ops.size());
  std::vector<Bytes> highest(ops.size(), -1);
  OpIndex index(trace);
  for (const StepLayout& step : layout.steps) {
    if (!step.complete) continue;
    StepRegions reg(step);
    for (size_t k = 0; k < step.units.size() && k < ops.size() && k < dropped.size(); ++k) {
      const UnitWindow& u = step.units[k];
      std::vector<MemoryEvent> ev;
      for (const Born& b : bornInForward(trace, filter, u, reg, static_cast<int>(k))) {
        ev.push_back({b.a->alloc, b.a->bytes});
        if (b.freed_inside) ev.push_back({b.a->free, -b.a->bytes});
      }
      // The whole replay's first highest moment (frees first at equal times,
      // as eventsPeak counts).
      std::sort(ev.begin(), ev.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
        return a.time != b.time ? a.time < b.time : a.delta < b.delta;
      });
      Bytes live = 0, peak = 0;
      Ns at = u.fwd_start;
      for (size_t i = 0; i < ev.size(); ++i) {
        live += ev[i].delta;
        if ((i + 1 == ev.size() || ev[i + 1].time != ev[i].time) && live > peak) {
          peak = live;
          at = ev[i].time;
        }
      }
      if (peak <= highest[k]) continue;
      highest[k] = peak;
      out[k].clear();
      for (const OpCall& c : index.within(u.fwd_start, u.fwd_end)) {
        if (c.end > at) break;
        for (const UnitOp& op : ops[k])
          if (op.key == c.key && isSaveable(op, dropped[k])) out[k].push_back(c.key);
      }
    }
  }
  return out;
}

void measureReplayPeaks(std::vector<std::vector<SelectiveOption>>& options, const Trace& trace,
                        const AllocationFilter& filter, const RunLayout& layout) {
  for (std::vector<SelectiveOption>& unit : options)
    for (SelectiveOption& o : unit) o.replay_peak = 0;
  OpIndex index(trace);
  for (const StepLayout& step : layout.steps) {
    if (!step.complete) continue;
    StepRegions reg(step);
    for (size_t k = 0; k < step.units.size() && k < options.size(); ++k) {
      if (options[k].empty()) continue;
      const UnitWindow& u = step.units[k];
      std::vector<Born> born = bornInForward(trace, filter, u, reg, static_cast<int>(k));
      std::vector<OpCall> calls = index.within(u.fwd_start, u.fwd_end);
      for (SelectiveOption& o : options[k]) {
        std::vector<OpCall> kept = savedCalls(calls, o.save);
        std::vector<MemoryEvent> ev;
        for (const Born& b : born) {
          if (const OpCall* call = callAt(kept, b.a->alloc)) {
            // A saved output that lingers is alive when the replay begins
            // (selectiveEffect counts it) and freed where it was in F_k.
            if (b.freed_inside && outputFate(*b.a, *call, reg, static_cast<int>(k)) == OutputFate::Lingering)
              ev.push_back({b.a->free, -b.a->bytes});
            continue;
          }
          ev.push_back({b.a->alloc, b.a->bytes});
          if (b.freed_inside) ev.push_back({b.a->free, -b.a->bytes});
        }
        o.replay_peak = std::max(o.replay_peak, eventsPeak(ev));
      }
    }
  }
}

}  // namespace gcprof::advisor
