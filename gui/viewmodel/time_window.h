// The visible span of the time axis and the zoom/pan arithmetic on it, kept
// apart from ImGui so that it is tested and shared by every view.
#pragma once

#include <algorithm>
#include <cmath>

#include "trace.h"

namespace gcprof::view {

struct TimeWindow {
  double t0 = 0;  // ns
  double t1 = 1;

  double width() const { return t1 - t0; }
  // Pixel <-> time for an axis of `pixels` starting at x = 0.
  double toX(double t, double pixels) const { return (t - t0) / width() * pixels; }
  double toTime(double x, double pixels) const { return t0 + x / pixels * width(); }

  // Zoom by `factor` (< 1 zooms in) keeping the time under `anchor` in place.
  void zoom(double factor, double anchor) {
    double w = std::max(width() * factor, minWidthAt(anchor));
    double f = (anchor - t0) / width();
    t0 = anchor - f * w;
    t1 = t0 + w;
  }
  void pan(double dt) { t0 += dt; t1 += dt; }
  // Keep some of [lo, hi] on screen and never wider than a margin around it.
  void clampTo(double lo, double hi) {
    double span = std::max(hi - lo, minWidthAt(hi));
    double margin = span * 0.05;
    if (width() > span + 2 * margin) { t0 = lo - margin; t1 = hi + margin; return; }
    if (t0 < lo - margin) pan(lo - margin - t0);
    if (t1 > hi + margin) pan(hi + margin - t1);
  }
  static TimeWindow fit(double lo, double hi) {
    double span = std::max(hi - lo, minWidthAt(hi));
    return {lo - span * 0.01, lo + span * 1.01};
  }
  // Below a microsecond nothing recorded can be told apart.
  static constexpr double kMinWidth = 1000.0;
  // Far from zero (a damaged trace's times near 2^60 ns) a double's spacing
  // is hundreds of ns: a window must span many of them, or its two ends
  // round to one time and the width to zero.
  static double minWidthAt(double t) { return std::max(kMinWidth, std::fabs(t) * 0x1p-44); }
};

}  // namespace gcprof::view
