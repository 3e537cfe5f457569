// A damaged or hand-made trace with sizes and times near the int64 limits
// opens in the GUI's view model (series, stacked memory, lanes, units table)
// without signed overflow: the sanitizer build (make sanitize) runs this, and
// the plain build checks that no live total wraps to a negative one.
#include <gtest/gtest.h>

#include <limits>

#include "fabricated_training.h"
#include "run_view.h"
#include "trace_document.h"

namespace gcprof::view {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void openEverything(testing::TrainingShape shape) {
  Trace t = testing::fabricateTraining(shape);
  RunView v(t, {});
  EXPECT_GE(v.memory.peak(), 0);
  EXPECT_GE(v.end, v.begin);
  for (const UnitStats& u : v.units) {
    EXPECT_GE(u.saved_bytes, 0) << u.name;
    EXPECT_GE(u.forward_ns, 0) << u.name;
  }
  std::vector<Bytes> series;
  v.memory.seriesAt(v.end, series);
  EXPECT_GE(v.memory.totalAt(v.end), 0);
  EXPECT_GE(v.memory.maxIn(v.begin, v.end), 0);
  EXPECT_GE(totalCurve(v.trace).peak(), 0);
  EXPECT_FALSE(v.label().empty());
  EXPECT_NE(TraceDocument::fromTrace(t, "extreme"), nullptr);
}

TEST(ExtremeValues, HugeSizes) {
  testing::TrainingShape s;
  s.param_bytes = kMax / 3;
  s.activation_bytes = kMax / 5;
  openEverything(s);
}

TEST(ExtremeValues, HugeTimes) {
  testing::TrainingShape s;
  s.layer_forward_ns = kMax / 4096;  // the fabricator itself adds a few hundred of them
  openEverything(s);
}

TEST(ExtremeValues, Both) {
  testing::TrainingShape s;
  s.param_bytes = kMax / 2;  // the fabricator doubles it for optimizer state
  s.activation_bytes = kMax;
  s.layer_forward_ns = kMax / 4096;
  openEverything(s);
}

}  // namespace
}  // namespace gcprof::view
