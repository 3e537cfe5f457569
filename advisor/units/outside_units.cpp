#include "units/outside_units.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "byte_text.h"

namespace gcprof::advisor {

std::string OutsideUnits::describe(size_t max) const {
  std::string s;
  Bytes rest = 0;
  for (size_t i = 0; i < by_module.size(); ++i) {
    if (i >= max) {
      sat::addTo(rest, by_module[i].bytes);
      continue;
    }
    const std::string& m = by_module[i].module;
    s += (s.empty() ? "" : ", ") + (m.empty() ? std::string("code outside modules") : m) + " " +
         formatBytes(by_module[i].bytes);
  }
  if (rest > 0) s += ", other modules " + formatBytes(rest);
  return s;
}

namespace {

bool ancestorOf(const std::string& outer, const std::string& inner) {
  return outer.empty() || (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
                           inner[outer.size()] == '.');
}

bool holdsAUnit(const std::string& module, const std::vector<std::string>& units) {
  return std::any_of(units.begin(), units.end(),
                     [&](const std::string& u) { return u == module || ancestorOf(module, u); });
}

bool insideAUnit(const std::string& module, const std::vector<std::string>& units) {
  return std::any_of(units.begin(), units.end(),
                     [&](const std::string& u) { return u == module || ancestorOf(u, module); });
}

}  // namespace

OutsideUnits outsideUnits(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                          const std::vector<std::string>& units, Ns at) {
  OutsideUnits out;
  const StepLayout* step = nullptr;
  for (const StepLayout& s : layout.steps)
    if (s.complete && !s.units.empty() && s.start <= at && at <= s.end) step = &s;
  if (!step) return out;
  auto byUnit = [&](Ns t) {
    return std::any_of(step->units.begin(), step->units.end(), [&](const UnitWindow& w) {
      return (w.fwd_start <= t && t <= w.fwd_end) || (w.bwd_start <= t && t <= w.bwd_end);
    });
  };
  std::unordered_map<int64_t, const Range*> range_of;
  for (const Range& r : trace.ranges) range_of[r.id] = &r;
  // The outermost enclosing module range that holds no unit ("" when none);
  // false when a unit or a module inside one made it.
  auto moduleOf = [&](int64_t id, std::string& found) {
    for (int hops = 0; id != 0 && hops < 256; ++hops) {
      auto it = range_of.find(id);
      if (it == range_of.end()) break;
      const Range& r = *it->second;
      if (r.domain == RangeDomain::Module && !r.name.empty()) {
        if (insideAUnit(r.name, units)) return false;
        if (!holdsAUnit(r.name, units)) found = r.name;
      }
      id = r.parent;
    }
    return true;
  };
  std::map<std::string, Bytes> bytes;
  Ns from = step->units.front().fwd_start;
  for (const Allocation& a : trace.allocations) {
    if (a.alloc > at) break;  // sorted by allocation time
    if (a.alloc < from || (a.freed() && a.free <= at) || !filter.matches(a) || byUnit(a.alloc))
      continue;
    std::string module;
    if (!moduleOf(a.range, module)) continue;
    sat::addTo(bytes[module], a.bytes);
    sat::addTo(out.total, a.bytes);
  }
  for (const auto& [m, b] : bytes) out.by_module.push_back({m, b});
  std::stable_sort(out.by_module.begin(), out.by_module.end(),
                   [](const ModuleBytes& x, const ModuleBytes& y) { return x.bytes > y.bytes; });
  return out;
}

}  // namespace gcprof::advisor
