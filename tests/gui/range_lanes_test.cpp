// Range lanes: window queries and folding of narrow ranges.
#include <gtest/gtest.h>

#include "range_lanes.h"

namespace gcprof::view {
namespace {

Range moduleRange(int64_t id, const std::string& name, Ns start, Ns end) {
  Range r;
  r.id = id;
  r.name = name;
  r.domain = RangeDomain::Module;
  r.phase = Phase::Forward;
  r.depth = 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
  r.start = start;
  r.end = end;
  return r;
}

Trace laneTrace() {
  Trace t;
  t.steps = {{0, 0, 10'000}, {1, 10'000, 20'000}};
  // depth 2: one wide range, then 100 ranges of 10 ns back to back, then a
  // gap, then one more narrow one.
  t.ranges.push_back(moduleRange(1, "layers.0", 0, 5000));
  for (int i = 0; i < 100; ++i)
    t.ranges.push_back(moduleRange(2 + i, "layers.1", 5000 + i * 10, 5000 + i * 10 + 10));
  t.ranges.push_back(moduleRange(200, "layers.2", 15'000, 15'010));
  t.ranges.push_back(moduleRange(201, "layers.2.mlp", 15'000, 15'005));
  return t;
}

TEST(RangeLanes, StepsFirstThenDepths) {
  RangeLanes lanes(laneTrace());
  ASSERT_EQ(lanes.lanes().size(), 3u);
  EXPECT_TRUE(lanes.lanes()[0].steps);
  EXPECT_EQ(lanes.lanes()[1].depth, 2);
  EXPECT_EQ(lanes.lanes()[2].depth, 3);
}

TEST(RangeLanes, ZoomedInShowsEveryRangeInTheWindowOnly) {
  RangeLanes lanes(laneTrace());
  std::vector<LaneItem> out;
  // 100 ns over 1000 px: a 10 ns range is 100 px wide.
  lanes.visible(1, TimeWindow{5200, 5300}, 1000, 3, out);
  ASSERT_EQ(out.size(), 11u);  // the ranges touching [5200, 5300]
  for (const LaneItem& it : out) {
    EXPECT_EQ(it.folded, 1);
    EXPECT_GE(it.range, 0);
    EXPECT_GE(it.end, 5200);
    EXPECT_LE(it.start, 5300);
  }
}

TEST(RangeLanes, ZoomedOutFoldsNarrowRangesAndLosesNone) {
  RangeLanes lanes(laneTrace());
  std::vector<LaneItem> out;
  // 20 us over 1000 px: 20 ns a pixel, so 10 ns ranges fold.
  lanes.visible(1, TimeWindow{0, 20'000}, 1000, 3, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].range, 0);        // the wide one stays itself
  EXPECT_EQ(out[1].range, -1);       // the 100 narrow ones become one fold
  EXPECT_EQ(out[1].folded, 100);
  EXPECT_EQ(out[1].start, 5000);
  EXPECT_EQ(out[1].end, 6000);
  EXPECT_EQ(out[2].folded, 1);       // alone after a gap: still itself
  EXPECT_GE(out[2].range, 0);
  int total = 0;
  for (const LaneItem& it : out) total += it.folded;
  EXPECT_EQ(total, 102);
}

TEST(RangeLanes, WindowBeforeOrAfterEverythingIsEmpty) {
  RangeLanes lanes(laneTrace());
  std::vector<LaneItem> out;
  lanes.visible(1, TimeWindow{-500, -100}, 1000, 3, out);
  EXPECT_TRUE(out.empty());
  lanes.visible(1, TimeWindow{30'000, 40'000}, 1000, 3, out);
  EXPECT_TRUE(out.empty());
  lanes.visible(7, TimeWindow{0, 40'000}, 1000, 3, out);  // no such lane
  EXPECT_TRUE(out.empty());
}

TEST(TimeWindow, ZoomKeepsTheAnchorAndPanMoves) {
  TimeWindow w{0, 1'000'000};
  w.zoom(0.5, 250'000);
  EXPECT_DOUBLE_EQ(w.t0, 125'000);
  EXPECT_DOUBLE_EQ(w.t1, 625'000);
  w.pan(-200'000);
  w.clampTo(0, 1'000'000);
  EXPECT_GE(w.t0, -50'000);
  w.zoom(1e-9, 300'000);
  EXPECT_DOUBLE_EQ(w.width(), TimeWindow::kMinWidth);
  EXPECT_NEAR(w.toTime(w.toX(123'456, 800), 800), 123'456, 1e-6);
}

}  // namespace
}  // namespace gcprof::view

#include "time_warp.h"

namespace gcprof::view {
namespace {

TEST(TimeWarp, StretchesStepsOntoTheBaselineAndShiftsOutside) {
  std::vector<Step> other = {{0, 100, 300}, {1, 400, 800}};
  std::vector<Step> base = {{0, 1000, 1100}, {1, 1200, 1400}};
  TimeWarp w(other, base, 0);
  EXPECT_DOUBLE_EQ(w.toBaseline(100), 1000);
  EXPECT_DOUBLE_EQ(w.toBaseline(200), 1050);   // middle of step 0
  EXPECT_DOUBLE_EQ(w.toBaseline(600), 1300);   // middle of step 1
  EXPECT_DOUBLE_EQ(w.toBaseline(350), 1150);   // between the steps
  EXPECT_DOUBLE_EQ(w.toBaseline(50), 950);     // before: shifted like step 0's start
  EXPECT_DOUBLE_EQ(w.toBaseline(900), 1500);   // after: shifted like step 1's end
  for (double t : {0.0, 150.0, 333.0, 777.0, 2000.0}) EXPECT_NEAR(w.fromBaseline(w.toBaseline(t)), t, 1e-9);
  TimeWarp none({}, base, 25);                 // no steps in common: the fallback shift
  EXPECT_DOUBLE_EQ(none.toBaseline(10), 35);
  TimeWarp identity;
  EXPECT_DOUBLE_EQ(identity.toBaseline(123), 123);
}

}  // namespace
}  // namespace gcprof::view
