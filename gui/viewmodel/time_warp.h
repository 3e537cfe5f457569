// Places another run's timeline on the baseline's time axis. Re-runs of one
// command differ in speed (recomputation makes every backward longer), so a
// plain shift drifts further off with every step; instead each recorded step
// of the other run is stretched onto the same step of the baseline, and
// times outside the matched steps are shifted by the nearest step's offset.
#pragma once

#include <vector>

#include "trace.h"

namespace gcprof::view {

class TimeWarp {
 public:
  TimeWarp() = default;  // identity
  // Steps matched by index; `fallback_shift` (other -> baseline) when no step
  // is in both.
  TimeWarp(const std::vector<Step>& other, const std::vector<Step>& baseline, Ns fallback_shift);

  double toBaseline(double t) const { return map(t, from_, to_); }
  double fromBaseline(double t) const { return map(t, to_, from_); }

 private:
  // Piecewise linear through the knots (both increasing), shifted outside.
  static double map(double t, const std::vector<double>& x, const std::vector<double>& y);
  std::vector<double> from_, to_;  // knots: other-run time -> baseline time
  double shift_ = 0;
};

}  // namespace gcprof::view
