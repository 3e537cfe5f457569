#include "chain/autocast_casts.h"

#include <algorithm>

namespace gcprof::advisor {

namespace {
constexpr std::string_view kClear = "autocast.clear_cache";
}

AutocastCasts::AutocastCasts(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout) {
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::User && r.name == kClear) clears_.push_back(r.start);
  if (clears_.empty()) return;
  std::sort(clears_.begin(), clears_.end());
  std::unordered_map<int64_t, Ns> step_end;  // complete steps
  for (const StepLayout& s : layout.steps)
    if (s.complete) step_end[s.step] = std::max(step_end[s.step], s.end);
  std::unordered_map<int64_t, const Range*> backward;
  for (const Range& r : trace.ranges) {
    if (r.domain != RangeDomain::Module) continue;
    module_of_[r.id] = r.name;
    if (r.phase == Phase::Backward) backward[r.id] = &r;
  }
  for (const Allocation& a : trace.allocations) {
    auto r = backward.find(a.range);
    if (r == backward.end() || !filter.counts(a)) continue;
    auto end = step_end.find(a.step);
    if (end != step_end.end() && (!a.freed() || a.free > end->second))
      gradients_.emplace(r->second->name, a.step, a.bytes);
  }
}

Ns AutocastCasts::clearedAt(const Allocation& a, Ns before) const {
  if (clears_.empty()) return -1;
  auto module = module_of_.find(a.range);
  if (module == module_of_.end() || !gradients_.count({module->second, a.step, a.bytes * 2})) return -1;
  auto it = std::upper_bound(clears_.begin(), clears_.end(), a.alloc);
  if (it == clears_.end() || *it >= before || (a.freed() && a.free <= *it)) return -1;
  return *it;
}

}  // namespace gcprof::advisor
