// The moments of one complete step, in time order, that the chain model and
// the replay simulator both reason about:
//
//   F_0, FG_0, F_1, ..., F_{N-1}, Mid, B_{N-1}, BG_{N-1}, B_{N-2}, ..., BG_1, B_0
//
// F_k = [fwd_start, fwd_end] of unit k, FG_k the open gap to the next forward,
// Mid the open gap between the last forward and the first backward, B_k the
// closed backward window of unit k and BG_k the open gap after it. A time
// belongs to the earliest region that contains it, so every event at one
// instant falls in one region; before F_0 and after B_0 is "outside".
#pragma once

#include <vector>

#include "units/step_layout.h"

namespace gcprof::advisor {

class StepRegions {
 public:
  static constexpr int kOutside = -1;

  explicit StepRegions(const StepLayout& step);

  int units() const { return n_; }
  int count() const { return static_cast<int>(last_.size()); }  // 4N - 1
  int regionOf(Ns t) const;  // kOutside before F_0 / after B_0
  // regionOf(t) where it is known to be one of regions first..last (t after
  // first's predecessor ends and by last's end): searched among those only.
  int regionAmong(Ns t, int first, int last) const { return first + search(t, first, last - first + 1); }
  // regionOf(t) == region, without the search (asked of every row of a unit).
  bool contains(int region, Ns t) const {
    const size_t r = static_cast<size_t>(region);
    return t >= begin_ && t <= last_[r] && (region == 0 || t > last_[r - 1]);
  }

  Ns begin() const { return begin_; }
  Ns end() const { return last_.empty() ? begin_ : last_.back(); }

  // Region ids.
  static int forward(int k) { return 2 * k; }
  static int forwardGap(int k) { return 2 * k + 1; }  // k = N-1: Mid
  int backward(int k) const { return 2 * n_ + 2 * (n_ - 1 - k); }
  int backwardGap(int k) const { return backward(k) + 1; }  // after B_k, k >= 1

  // Forward positions 0..2N-2 are F_k = 2k, FG_k = 2k+1 (the region ids).
  bool isForwardPosition(int region) const { return region >= 0 && region <= 2 * n_ - 2; }
  // Backward positions mirror them: B_k -> 2k, BG_k -> 2k-1; -1 when `region`
  // is not in the backward part.
  int backwardPosition(int region) const;

  // The last time in `region` (non-decreasing over the regions).
  Ns lastOf(int region) const { return last_[static_cast<size_t>(region)]; }

 private:
  int search(Ns t, int first, int count) const;

  int n_ = 0;
  Ns begin_ = 0;
  std::vector<Ns> last_;  // last time (ns) in each region, made non-decreasing
};

// regionOf() of times asked in non-decreasing order (allocations in time
// order), walked on from the last answer instead of searched each time.
class RegionCursor {
 public:
  explicit RegionCursor(const StepRegions& reg) : reg_(&reg) {}
  int at(Ns t) {
    if (reg_->count() == 0 || t < reg_->begin() || t > reg_->end()) return StepRegions::kOutside;
    while (next_ < reg_->count() && reg_->lastOf(next_) < t) ++next_;
    return next_;
  }

 private:
  const StepRegions* reg_;
  int next_ = 0;  // no region before it ends at or after the times asked
};

}  // namespace gcprof::advisor
