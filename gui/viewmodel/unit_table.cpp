#include "unit_table.h"

#include <algorithm>
#include <map>
#include <set>

namespace gcprof::view {
namespace {

struct Interval {
  Ns start, end;
  int64_t step;
};

std::set<int64_t> steadySteps(const Trace& trace) {
  std::set<int64_t> s;
  for (size_t i = trace.steps.size() > 1 ? 1 : 0; i < trace.steps.size(); ++i)
    s.insert(trace.steps[i].index);
  return s;
}

}  // namespace

std::vector<UnitStats> unitStats(const Trace& trace, const SeriesAssignment& series) {
  const auto& units = series.units();
  std::vector<UnitStats> out(units.size());
  std::vector<std::vector<Interval>> backward(units.size());
  const std::set<int64_t> steady = steadySteps(trace);
  auto counts = [&](int64_t step) { return steady.empty() || steady.count(step) > 0; };
  const double n_steps = steady.empty() ? 1.0 : static_cast<double>(steady.size());

  for (size_t i = 0; i < units.size(); ++i) {
    out[i].name = units[i].name;
    out[i].colour = units[i].colour;
  }
  for (const Range& r : trace.ranges) {
    int u = series.unitIndex(r.name);
    if (u < 0) continue;
    if (r.phase == Phase::Forward && counts(r.step)) {
      // Device time when the kernels were correlated, else host time.
      double d = r.device_ns >= 0 ? static_cast<double>(r.device_ns)
                                  : static_cast<double>(r.end - r.start);
      out[u].forward_ns += d / n_steps;
    } else if (r.phase == Phase::Backward) {
      backward[u].push_back({r.start, r.end, r.step});
    }
  }
  for (auto& b : backward)
    std::sort(b.begin(), b.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });

  for (size_t i = 0; i < trace.allocations.size(); ++i) {
    uint16_t s = series.seriesOf(i);
    if (s < kFirstUnitSeries || s == kSeriesIgnored) continue;
    const Allocation& a = trace.allocations[i];
    if (!a.freed() || !counts(a.step)) continue;
    size_t u = s - kFirstUnitSeries;
    const auto& b = backward[u];
    // The last backward range of the unit starting at or before the free.
    auto it = std::upper_bound(b.begin(), b.end(), a.free,
                               [](Ns t, const Interval& x) { return t < x.start; });
    if (it == b.begin()) continue;
    --it;
    if (a.free <= it->end && (a.step < 0 || it->step < 0 || it->step == a.step))
      out[u].saved_bytes += static_cast<double>(a.bytes) / n_steps;
  }
  return out;
}

void applyPlan(std::vector<UnitStats>& stats, const PlanView* plan) {
  for (UnitStats& s : stats) {
    s.checkpointed = plan && plan->checkpointed(s.name);
    s.checkpointed_as = plan ? plan->checkpointedAs(s.name) : std::string();
    const std::vector<std::string>* save = plan ? plan->saveList(s.name) : nullptr;
    s.saved_ops = save ? save->size() : 0;
    s.predicted_saving = s.checkpointed ? s.saved_bytes : 0;
    if (save) {  // a selective unit drops what its save-list does not keep
      for (size_t i = 0; i < plan->save.size(); ++i)
        if (&plan->save[i] == save) s.predicted_saving = std::max(0.0, s.saved_bytes - static_cast<double>(plan->kept[i]));
    }
  }
}

}  // namespace gcprof::view
