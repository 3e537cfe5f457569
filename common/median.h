// The one median of the advisor: step times, unit times, recompute times and
// the recording's cost per call all use it. An even count gives the mean of
// the two middle values, computed so that int64 values near the limits of a
// damaged trace cannot overflow.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "saturating.h"

namespace gcprof::advisor {

// 0 for an empty list.
template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  if (v.size() % 2) return v[m];
  T a = v[m - 1], b = v[m];
  if constexpr (std::is_integral_v<T>)
    return sat::midpoint(a, b);
  else
    return (a + b) / 2;
}

}  // namespace gcprof::advisor
