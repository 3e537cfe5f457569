// Units that do not run in every step: models trained with LayerDrop (HF
// Wav2Vec2 and HuBERT, layerdrop=0.1 by default) skip each layer at random
// per step, so a recorded step misses a layer's forward and backward. Such a
// step is still a chain of the units that ran: the skipped unit gets empty
// windows at its place, and a plan that checkpoints it changes nothing there.
#include <algorithm>

#include <gtest/gtest.h>

#include "chain_run.h"
#include "units/step_layout.h"
#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

using testing::ChainRun;
using testing::ChainSpec;

// Unit `k` of step `s` did not run: its ranges and what it allocated are gone.
Trace skipping(const ChainSpec& spec, int s, int k) {
  Trace t = testing::chainTrace(spec);
  std::string name = testing::unitName(k);
  t.ranges.erase(std::remove_if(t.ranges.begin(), t.ranges.end(),
                                [&](const Range& r) { return r.step == s && r.name == name; }),
                 t.ranges.end());
  Ns f = testing::forwardStart(spec, s, k), b = testing::backwardStart(spec, s, k);
  t.allocations.erase(std::remove_if(t.allocations.begin(), t.allocations.end(),
                                     [&](const Allocation& a) {
                                       return (a.alloc >= f && a.alloc <= f + spec.forward) ||
                                              (a.alloc >= b && a.alloc <= b + 40);
                                     }),
                      t.allocations.end());
  return t;
}

TEST(SkippedUnits, AStepThatSkippedALayerIsAChainOfTheLayersThatRan) {
  ChainSpec spec;
  spec.steps = 2;
  RunLayout layout = stepLayouts(skipping(spec, 1, 1), testing::unitNames(spec.units));
  ASSERT_EQ(layout.complete, 2u) << layout.steps[1].problem;
  const std::vector<UnitWindow>& w = layout.steps[1].units;
  EXPECT_EQ(w[1].fwd_start, w[0].fwd_end);
  EXPECT_EQ(w[1].fwd_end, w[0].fwd_end);
  EXPECT_EQ(w[1].bwd_start, w[0].bwd_start);
  EXPECT_EQ(w[1].bwd_end, w[0].bwd_start);
  EXPECT_EQ(w[1].forward_ns, 0);
  EXPECT_EQ(w[2].fwd_start, testing::forwardStart(spec, 1, 2));  // the others as recorded
}

TEST(SkippedUnits, ASkippedFirstLayerSitsBeforeTheFirstThatRan) {
  ChainSpec spec;
  RunLayout layout = stepLayouts(skipping(spec, 0, 0), testing::unitNames(spec.units));
  ASSERT_EQ(layout.complete, 1u) << layout.steps[0].problem;
  const std::vector<UnitWindow>& w = layout.steps[0].units;
  EXPECT_EQ(w[0].fwd_end, testing::forwardStart(spec, 0, 1));
  EXPECT_EQ(w[0].bwd_start, testing::backwardStart(spec, 0, 1) + 40);
  EXPECT_EQ(w[0].bwd_end, w[0].bwd_start);
}

TEST(SkippedUnits, CheckpointingASkippedLayerChangesNothingInItsStep) {
  ChainSpec spec;
  ChainRun run(skipping(spec, 0, 1), testing::unitNames(spec.units));
  ASSERT_EQ(run.layout.complete, 1u);
  Simulation plain = run.simulate({}), skipped = run.simulate({{1, 1}});
  EXPECT_EQ(skipped.peak, plain.peak);
  EXPECT_EQ(skipped.total_recompute_ns, 0);
  EXPECT_LT(run.simPeak({{0, 0}}), plain.peak);  // the layers that ran still drop
}

// Three steps alike (no gradients kept from step to step) but for step 2,
// a steady one, where LayerDrop skipped layers.1. The chain used to take
// each drop as the least of all steps: 0 for layers.1 (and for what
// layers.0 hands it), so checkpointing it looked like it saved nothing and
// `every` priced at its recorded peak. It is priced by the steps it ran
// in now, and the step that skipped it by what it would have held there.
ChainSpec likeSteps() {
  ChainSpec spec;
  spec.steps = 3;
  spec.grad = 0;
  return spec;
}

TEST(SkippedUnits, ALayerSkippedInASteadyStepIsPricedByTheStepsItRanIn) {
  ChainSpec spec = likeSteps();
  ChainRun run(skipping(spec, 2, 1), testing::unitNames(spec.units));
  ASSERT_EQ(run.layout.complete, 3u);
  EXPECT_EQ(run.chain.saved[1], spec.saved);
  Segments every = everyUnit(spec.units), second = {{1, 1}};
  EXPECT_EQ(evaluateChain(run.chain, every).peak, run.simPeak(every));
  EXPECT_EQ(evaluateChain(run.chain, second).peak, run.simPeak(second));
  EXPECT_LT(run.simPeak(second), run.simPeak({}));
}

TEST(SkippedUnits, TheChainStaysABoundOfEveryStepThatSkippedALayer) {
  ChainSpec spec = likeSteps();
  for (int s = 0; s < spec.steps; ++s)
    for (int k = 0; k < spec.units; ++k) {
      ChainRun run(skipping(spec, s, k), testing::unitNames(spec.units));
      ASSERT_EQ(run.layout.complete, 3u);
      std::vector<Segments> plans = {{}, {{0, 0}}, {{1, 1}}, {{2, 2}}, {{0, 0}, {1, 1}}, {{0, 0}, {2, 2}},
                                     {{1, 1}, {2, 2}}, {{0, 1}}, {{1, 2}}, {{0, 2}}, everyUnit(spec.units)};
      for (const Segments& plan : plans)
        EXPECT_GE(evaluateChain(run.chain, plan).peak, run.simPeak(plan))
            << "step " << s << " skips layers." << k << ", plan of " << plan.size() << " segments";
    }
}

TEST(SkippedUnits, AStepWhereNoUnitRanIsNotAChain) {
  ChainSpec spec;
  spec.units = 1;
  RunLayout layout = stepLayouts(skipping(spec, 0, 0), testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps[0].problem, "no forward of layers.0");
}

TEST(SkippedUnits, AFrozenUnitWithAForwardButNoBackwardStaysRefused) {
  ChainSpec spec;
  Trace t = testing::chainTrace(spec);
  t.ranges.erase(std::remove_if(t.ranges.begin(), t.ranges.end(),
                                [](const Range& r) {
                                  return r.name == "layers.1" && r.phase == Phase::Backward;
                                }),
                 t.ranges.end());
  RunLayout layout = stepLayouts(t, testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps[0].problem, "no backward of layers.1");
}

}  // namespace
}  // namespace gcprof::advisor
