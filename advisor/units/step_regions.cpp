#include "units/step_regions.h"

#include <algorithm>

namespace gcprof::advisor {

StepRegions::StepRegions(const StepLayout& step) : n_(static_cast<int>(step.units.size())) {
  if (n_ == 0) return;
  const std::vector<UnitWindow>& u = step.units;
  begin_ = u.front().fwd_start;
  last_.resize(4 * n_ - 1);
  // Times are integer ns, so an open end e is the closed end e - 1.
  for (int k = 0; k < n_; ++k) {
    last_[forward(k)] = u[k].fwd_end;
    last_[forwardGap(k)] = (k + 1 < n_ ? u[k + 1].fwd_start : u[n_ - 1].bwd_start) - 1;
    last_[backward(k)] = u[k].bwd_end;
    if (k >= 1) last_[backwardGap(k)] = u[k - 1].bwd_start - 1;
  }
  // An empty region (an open gap of zero length) may end "before" its
  // predecessor; the running maximum keeps the earliest-region rule and
  // makes binary search valid.
  for (size_t r = 1; r < last_.size(); ++r) last_[r] = std::max(last_[r], last_[r - 1]);
}

int StepRegions::regionOf(Ns t) const {
  if (last_.empty() || t < begin_ || t > last_.back()) return kOutside;
  return search(t, 0, count());
}

// Of regions first..first+count-1, the offset of the first ending at or
// after t (the last when none does): std::lower_bound without its branch
// (asked of frees in no order, the branch is a coin toss each level).
int StepRegions::search(Ns t, int first, int count) const {
  const Ns* base = last_.data() + first;
  for (int n = count; n > 1;) {
    const int half = n / 2;
    base = base[half - 1] < t ? base + half : base;
    n -= half;
  }
  return static_cast<int>(base - (last_.data() + first));
}

int StepRegions::backwardPosition(int region) const {
  int y = region - 2 * n_;
  if (region < 0 || y < 0 || y > 2 * n_ - 2) return -1;
  if (y % 2 == 0) return 2 * (n_ - 1 - y / 2);
  return 2 * (n_ - 1 - (y - 1) / 2) - 1;
}

}  // namespace gcprof::advisor
