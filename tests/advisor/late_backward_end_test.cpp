// A unit's backward range that ends late because a later unit shares one of
// its inputs (an encoder-decoder's encoder output, read by every decoder
// layer: HF BART, Whisper). The recorded backward windows nest; the layout
// ends each where the next one starts, and plans are priced as on the same
// trace with windows that follow each other.
#include <gtest/gtest.h>

#include "chain_run.h"
#include "model/step_layout.h"

namespace gcprof::advisor {
namespace {

using testing::ChainRun;
using testing::ChainSpec;

// The default chain (chain_traces.h) with every unit's backward but the
// first's ending after layers.0's, the later units later (the shared input's
// gradient completes once the last reader is done; their hooks fire in
// reverse order).
Trace nestedBackwards(const ChainSpec& spec) {
  Trace t = testing::chainTrace(spec);
  Ns last_end = testing::backwardStart(spec, 0, 0) + 40;
  for (Range& r : t.ranges) {
    if (r.phase != Phase::Backward || r.name == testing::unitName(0)) continue;
    int k = r.name.back() - '0';
    r.end = last_end + k;
  }
  return t;
}

TEST(LateBackwardEnd, NestedBackwardWindowsEndWhereTheNextBegins) {
  ChainSpec spec;
  RunLayout layout = stepLayouts(nestedBackwards(spec), testing::unitNames(spec.units));
  ASSERT_EQ(layout.complete, 1u) << layout.steps.front().problem;
  const std::vector<UnitWindow>& w = layout.steps.front().units;
  EXPECT_EQ(w[2].bwd_end, testing::backwardStart(spec, 0, 1));
  EXPECT_EQ(w[1].bwd_end, testing::backwardStart(spec, 0, 0));
  EXPECT_EQ(w[0].bwd_end, testing::backwardStart(spec, 0, 0) + 40);
}

TEST(LateBackwardEnd, PlansArePricedAsWithoutTheLateEnds) {
  ChainSpec spec;
  ChainRun late(nestedBackwards(spec), spec.units), clean(spec);
  for (const Segments& plan : std::vector<Segments>{{}, {{0, 0}}, {{1, 1}}, {{2, 2}}, {{0, 1}}, {{0, 2}},
                                                    {{0, 0}, {1, 2}}}) {
    EXPECT_EQ(late.simPeak(plan), clean.simPeak(plan));
    EXPECT_EQ(evaluateChain(late.chain, plan).peak, evaluateChain(clean.chain, plan).peak);
  }
}

TEST(LateBackwardEnd, BackwardsOutOfOrderAreStillRefused) {
  // layers.1's backward starting before layers.2's is not a late end.
  ChainSpec spec;
  Trace t = testing::chainTrace(spec);
  for (Range& r : t.ranges)
    if (r.phase == Phase::Backward && r.name == testing::unitName(1)) r.start = testing::backwardStart(spec, 0, 2) - 5;
  testing::sortAsLoaded(t);
  RunLayout layout = stepLayouts(t, testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem, "backward of layers.1 starts before layers.2's ends");
}

}  // namespace
}  // namespace gcprof::advisor
