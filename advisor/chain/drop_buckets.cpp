#include "chain/drop_buckets.h"

#include <algorithm>
#include <climits>

#include "chain/reentrant_holds.h"
#include "memory/cache_allocations.h"
#include "memory/memory_events.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

bool ranAll(const StepLayout& step, int first, int last) {
  for (int k = first; k <= last; ++k)
    if (step.units[k].skipped) return false;
  return true;
}

}  // namespace

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
  RegionCursor born_in(reg);  // the allocations come in time order
  for (auto it = first; it != trace.allocations.end() && it->alloc <= reg.end(); ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || (a.freed() && a.free <= a.alloc) || keptByTheLibrary(a)) continue;
    int p = born_in.at(a.alloc);
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

}  // namespace gcprof::advisor
