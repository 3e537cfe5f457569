#include "scale/persistent_memory.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gcprof::advisor {
namespace {

using Multiset = std::map<Bytes, int64_t>;  // byte size -> count

Multiset multisetOf(const std::vector<Bytes>& sizes) {
  Multiset m;
  for (Bytes b : sizes) ++m[b];
  return m;
}

Multiset intersect(const Multiset& a, const Multiset& b) {
  Multiset out;
  for (const auto& [bytes, n] : a) {
    auto it = b.find(bytes);
    if (it != b.end()) out[bytes] = std::min(n, it->second);
  }
  return out;
}

void subtract(Multiset& from, const Multiset& what) {
  for (const auto& [bytes, n] : what) {
    auto it = from.find(bytes);
    if (it == from.end()) continue;
    it->second -= std::min(n, it->second);
    if (it->second == 0) from.erase(it);
  }
}

Bytes total(const Multiset& m) {
  Bytes t = 0;
  for (const auto& [bytes, n] : m) t += bytes * n;
  return t;
}

}  // namespace

Bytes PersistentModel::at(double size) const {
  return constant + workspace + static_cast<Bytes>(std::llround(per_size * size));
}

std::vector<Bytes> liveAllocationsAtStep(const Trace& trace, const AllocationFilter& filter, int64_t step) {
  std::vector<Bytes> out;
  auto s = std::find_if(trace.steps.begin(), trace.steps.end(), [&](const Step& x) { return x.index == step; });
  if (s == trace.steps.end()) return out;
  for (const Allocation& a : trace.allocations) {
    if (a.alloc >= s->start) break;  // sorted by allocation time
    if (filter.matches(a) && (!a.freed() || a.free >= s->start)) out.push_back(a.bytes);
  }
  return out;
}

PersistentModel persistentModel(std::vector<PersistentSample> samples) {
  std::sort(samples.begin(), samples.end(),
            [](const PersistentSample& a, const PersistentSample& b) { return a.size < b.size; });
  const PersistentSample& small = samples.front();
  const PersistentSample& large = samples.back();
  Multiset common = multisetOf(small.allocations);
  for (const PersistentSample& s : samples) common = intersect(common, multisetOf(s.allocations));
  Multiset rest_small = multisetOf(small.allocations), rest_large = multisetOf(large.allocations);
  subtract(rest_small, common);
  subtract(rest_large, common);
  // An allocation of x bytes at the small size and x * large/small bytes at
  // the large one is taken as the same tensor with the size as a dimension.
  Bytes proportional = 0;
  for (auto it = rest_small.rbegin(); it != rest_small.rend(); ++it) {
    double scaled = static_cast<double>(it->first) * large.size / small.size;
    Bytes y = static_cast<Bytes>(std::llround(scaled));
    if (std::fabs(scaled - static_cast<double>(y)) > 1e-6) continue;
    auto match = rest_large.find(y);
    if (match == rest_large.end()) continue;
    int64_t n = std::min(it->second, match->second);
    proportional += y * n;
    match->second -= n;
    if (match->second == 0) rest_large.erase(match);
  }
  PersistentModel m;
  m.constant = total(common);
  m.per_size = static_cast<double>(proportional) / large.size;
  // The rest of the large run's persistent bytes, measured as the chain
  // measures them (a few allocations may straddle the step's start).
  m.workspace = std::max<Bytes>(0, large.persistent - m.constant - proportional);
  return m;
}

}  // namespace gcprof::advisor
