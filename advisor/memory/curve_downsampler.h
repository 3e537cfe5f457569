// downsample (memory_curve.h) of a curve handed over a point at a time,
// its number of points known beforehand (a first sweep counts them): the
// points kept come out as they are decided, none of the others held.
#pragma once

#include <cstddef>

#include "memory/memory_curve.h"

namespace gcprof::advisor {

class CurveDownsampler {
 public:
  CurveDownsampler(size_t points, size_t max_points)
      : n_(points), all_(max_points < 2 || points <= max_points), per_(all_ ? 1 : (points + max_points - 1) / max_points) {}

  // At most max_points + 1 points are kept.
  size_t keptAtMost(size_t max_points) const { return all_ ? n_ : max_points + 1; }

  // The next point of the curve; calls keep(point) for each point kept.
  // downsample's buckets of `per` points: each keeps its highest (the
  // first of equals).
  template <class Keep>
  void add(const MemoryPoint& p, Keep&& keep) {
    last_ = p;
    if (k_ % per_ == 0 || p.live > best_.live) best_ = p;
    if (k_ % per_ == per_ - 1 || k_ + 1 == n_) {
      keep(best_);
      kept_ = best_;
    }
    ++k_;
  }

  // The last point closes the curve.
  template <class Keep>
  void finish(Keep&& keep) {
    if (!all_ && k_ > 0 && kept_.time != last_.time) keep(last_);
  }

  size_t seen() const { return k_; }

 private:
  size_t n_;
  bool all_;
  size_t per_;
  size_t k_ = 0;
  MemoryPoint best_, last_, kept_;
};

}  // namespace gcprof::advisor
