#include "time_warp.h"

#include <algorithm>
#include <map>

namespace gcprof::view {

TimeWarp::TimeWarp(const std::vector<Step>& other, const std::vector<Step>& baseline, Ns fallback_shift) {
  std::map<int64_t, const Step*> base;
  for (const Step& s : baseline) base[s.index] = &s;
  for (const Step& s : other) {
    auto it = base.find(s.index);
    if (it == base.end() || s.end <= s.start || it->second->end <= it->second->start) continue;
    double a0 = static_cast<double>(s.start), a1 = static_cast<double>(s.end);
    double b0 = static_cast<double>(it->second->start), b1 = static_cast<double>(it->second->end);
    // Knots must increase on both axes; a step out of order is left out.
    if (!from_.empty() && (a0 < from_.back() || b0 < to_.back())) continue;
    from_.insert(from_.end(), {a0, a1});
    to_.insert(to_.end(), {b0, b1});
  }
  if (from_.empty()) {
    from_ = {0};
    to_ = {static_cast<double>(fallback_shift)};
  }
}

double TimeWarp::map(double t, const std::vector<double>& x, const std::vector<double>& y) {
  if (x.empty()) return t;
  if (t <= x.front()) return t + (y.front() - x.front());
  if (t >= x.back()) return t + (y.back() - x.back());
  size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), t) - x.begin());  // x[i-1] <= t < x[i]
  double span = x[i] - x[i - 1];
  if (span <= 0) return y[i];
  return y[i - 1] + (t - x[i - 1]) / span * (y[i] - y[i - 1]);
}

}  // namespace gcprof::view
