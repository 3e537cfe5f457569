#include "allocation_frees.h"

#include <algorithm>

namespace gcprof {

void applyFrees(std::vector<Free>& frees, std::vector<Allocation>& byAlloc) {
  auto byKey = [](const Free& a, const Free& b) { return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id; };
  if (!std::is_sorted(frees.begin(), frees.end(), byKey)) std::sort(frees.begin(), frees.end(), byKey);
  auto before = [](const Allocation& a, const Free& f) { return a.alloc != f.alloc ? a.alloc < f.alloc : a.id < f.id; };
  // Each search starts where the last ended and gallops: a few frees in ten
  // million rows cost a few searches, a free for every row a walk.
  const auto end = byAlloc.end();
  auto next = byAlloc.begin();
  for (const Free& f : frees) {
    auto lo = next, hi = next;
    for (ptrdiff_t step = 1; hi != end && before(*hi, f); step *= 2) {
      lo = hi + 1;
      hi = end - hi > step ? hi + step : end;
    }
    next = std::lower_bound(lo, hi, f, before);
    if (next != end && next->alloc == f.alloc && next->id == f.id) next->free = f.free;
  }
}

}  // namespace gcprof
