#include "solve/fixed_plans.h"

#include <algorithm>
#include <cmath>

namespace gcprof::advisor {

Segments everyUnit(int units) {
  Segments s;
  for (int k = 0; k < units; ++k) s.push_back({k, k});
  return s;
}

Segments uniformSegments(int units, int length, SegmentKind kind) {
  Segments s;
  length = std::max(1, length);
  for (int k = 0; k < units; k += length) {
    if (kind == SegmentKind::Region)
      s.push_back({k, std::min(units, k + length) - 1});
    else
      s.push_back({k, k});  // a module cannot span units: checkpoint one every `length`
  }
  return s;
}

Segments uniformPlan(int units, SegmentKind kind) {
  int k = static_cast<int>(std::lround(std::sqrt(static_cast<double>(units))));
  return uniformSegments(units, k, kind);
}

}  // namespace gcprof::advisor
