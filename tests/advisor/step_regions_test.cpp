// StepRegions::regionOf is the earliest region whose last time is at or
// after t, and contains(r, t) and regionAmong agree with it, where gaps are
// empty (units back to back) or regions collapse too.
#include "units/step_regions.h"

#include <gtest/gtest.h>

namespace gcprof::advisor {
namespace {

TEST(StepRegions, RegionOfIsTheEarliestRegionContainingATime) {
  StepLayout step;
  // Unit 1 starts where unit 0 ends (an empty forward gap), unit 2 one ns
  // later; the last backward starts right after the last forward.
  step.units = {{100, 200, 700, 800}, {200, 300, 600, 690}, {301, 400, 401, 590}};
  StepRegions reg(step);
  for (Ns t = 90; t <= 810; ++t) {
    int earliest = StepRegions::kOutside;
    for (int r = reg.count() - 1; r >= 0; --r)
      if (t >= reg.begin() && t <= reg.lastOf(r)) earliest = r;
    ASSERT_EQ(reg.regionOf(t), earliest) << "t=" << t;
    for (int r = 0; r < reg.count(); ++r)
      ASSERT_EQ(reg.contains(r, t), reg.regionOf(t) == r) << "t=" << t << " region " << r;
    // Searched among regions first..last where t lies in them.
    for (int first = 1; first < reg.count(); ++first)
      for (int last = first; last < reg.count(); ++last)
        if (t >= reg.begin() && t > reg.lastOf(first - 1) && t <= reg.lastOf(last)) {
          ASSERT_EQ(reg.regionAmong(t, first, last), reg.regionOf(t)) << "t=" << t << " in " << first << ".." << last;
        }
  }
}

}  // namespace
}  // namespace gcprof::advisor
