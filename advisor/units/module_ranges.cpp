#include "units/module_ranges.h"

#include <algorithm>
#include <cstdint>

namespace gcprof::advisor {

ModuleRanges moduleRanges(const std::vector<Range>& ranges) {
  ModuleRanges out;
  for (const Range& r : ranges) {
    if (r.domain != RangeDomain::Module) continue;
    if (r.phase == Phase::User) continue;
    StepRanges& sr = out.by_name[r.name][r.step];
    (r.phase == Phase::Forward ? sr.forward : sr.backward).push_back(&r);
    auto [it, inserted] = out.facts.try_emplace(r.name);
    ModuleFacts& m = it->second;
    // The model itself (the python shim names it "") takes each of its
    // ranges as its first, as moduleStats always has (it told a module seen
    // before by its name being set): its first_forward is its last range's,
    // and block_families orders by it, so `show` and `advise` keep that.
    if (inserted || r.name.empty()) {
      m.depth = r.depth;
      m.first_forward = r.phase == Phase::Forward ? r.start : INT64_MAX;
    } else if (r.phase == Phase::Forward) {
      m.first_forward = std::min(m.first_forward, r.start);
    }
    if (r.phase == Phase::Forward && r.parent == 0) m.root = true;
  }
  return out;
}

std::pair<Ns, Ns> backwardSpan(const StepRanges& sr) {
  Ns bs = sr.backward.front()->start, be = sr.backward.front()->end;
  for (const Range* b : sr.backward) {
    bs = std::min(bs, b->start);
    be = std::max(be, b->end);
  }
  return {bs, be};
}

}  // namespace gcprof::advisor
