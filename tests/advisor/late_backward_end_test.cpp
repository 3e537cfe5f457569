// A unit's backward range that ends late because every unit of its list also
// reads one tensor from outside the chain (an encoder-decoder's encoder
// output, read by every decoder layer: HF BART, Whisper). The recorded
// backward windows nest and end together; the layout ends each where the next
// one starts, and plans are priced as on the same trace with windows that
// follow each other. A torchvision DenseNet layer, passed all earlier features
// of its dense block, ends with its block the same way. A sibling branch of
// one block nests the same way (ResNet's downsample reads the block input
// with conv1) and stays refused.
#include <gtest/gtest.h>

#include "chain_run.h"
#include "units/step_layout.h"

namespace gcprof::advisor {
namespace {

using testing::ChainRun;
using testing::ChainSpec;

// Every unit is passed its predecessor's output and a tensor as large again
// from outside the chain (the python shim's input/output bytes).
Trace withOutsideInput(Trace t, const ChainSpec& spec) {
  for (Range& r : t.ranges)
    if (r.phase == Phase::Forward) {
      r.input_bytes = 2 * spec.output;
      r.output_bytes = spec.output;
    }
  return t;
}

// Every unit's backward but the first's ends with layers.0's: the shared
// input's gradient completes once the last reader is done, which ends them all.
Trace nestedBackwards(const ChainSpec& spec) {
  Trace t = withOutsideInput(testing::chainTrace(spec), spec);
  for (Range& r : t.ranges)
    if (r.phase == Phase::Backward && r.name != testing::unitName(0))
      r.end = testing::backwardStart(spec, 0, 0) + 40;
  return t;
}

Trace renamed(Trace t, const std::vector<std::string>& names) {
  for (Range& r : t.ranges)
    for (size_t k = 0; k < names.size(); ++k)
      if (r.name == testing::unitName(static_cast<int>(k))) r.name = names[k];
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

TEST(LateBackwardEnd, DenseLayersOfOneBlockEndWhereTheNextBegins) {
  // torchvision DenseNet: each layer is passed all earlier features of its
  // block, the block's input among them (the outside tensor here).
  ChainSpec spec;
  std::vector<std::string> names = {"features.denseblock1.denselayer1", "features.denseblock1.denselayer2",
                                    "features.denseblock1.denselayer3"};
  RunLayout layout = stepLayouts(renamed(nestedBackwards(spec), names), names);
  ASSERT_EQ(layout.complete, 1u) << layout.steps.front().problem;
  const std::vector<UnitWindow>& w = layout.steps.front().units;
  EXPECT_EQ(w[2].bwd_end, testing::backwardStart(spec, 0, 1));
  EXPECT_EQ(w[1].bwd_end, testing::backwardStart(spec, 0, 0));
}

TEST(LateBackwardEnd, LayersOfTwoNumberedListsAreRefused) {
  // The last layer of one dense block and the first of the next are no
  // neighbours in one list (the number is not the names' only difference).
  ChainSpec spec;
  std::vector<std::string> names = {"features.denseblock1.denselayer1", "features.denseblock1.denselayer2",
                                    "features.denseblock2.denselayer1"};
  RunLayout layout = stepLayouts(renamed(nestedBackwards(spec), names), names);
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem,
            "backward of features.denseblock1.denselayer2 starts before features.denseblock2.denselayer1's ends");
}

TEST(LateBackwardEnd, TheDownAndUpPathsOfAUNetEndWhereTheNextBegins) {
  // diffusers UNet2DConditionModel: every block reads the time embedding
  // (the outside tensor here), so all windows end when its gradient
  // completes; up_blocks.0 and down_blocks.1 are the ends of two sibling
  // lists, neighbours in the chain. Was: "backward of down_blocks.1 starts
  // before up_blocks.0's ends".
  ChainSpec spec;
  spec.units = 4;
  std::vector<std::string> names = {"down_blocks.0", "down_blocks.1", "up_blocks.0", "up_blocks.1"};
  Trace t = renamed(nestedBackwards(spec), names);
  for (Range& r : t.ranges)  // the down blocks also return their skip connections
    if (r.phase == Phase::Forward && r.name.rfind("down_blocks.", 0) == 0) r.output_bytes = 5 * spec.output;
  RunLayout layout = stepLayouts(t, names);
  ASSERT_EQ(layout.complete, 1u) << layout.steps.front().problem;
  const std::vector<UnitWindow>& w = layout.steps.front().units;
  EXPECT_EQ(w[3].bwd_end, testing::backwardStart(spec, 0, 2));
  EXPECT_EQ(w[2].bwd_end, testing::backwardStart(spec, 0, 1));
  EXPECT_EQ(w[1].bwd_end, testing::backwardStart(spec, 0, 0));
}

TEST(LateBackwardEnd, ListsUnderTwoParentsAreRefused) {
  ChainSpec spec;
  std::vector<std::string> names = {"encoder.layers.0", "encoder.layers.1", "decoder.layers.0"};
  RunLayout layout = stepLayouts(renamed(nestedBackwards(spec), names), names);
  EXPECT_EQ(layout.complete, 0u);
}

TEST(LateBackwardEnd, PlansArePricedAsWithoutTheLateEnds) {
  ChainSpec spec;
  ChainRun late(nestedBackwards(spec), spec.units),
      clean(withOutsideInput(testing::chainTrace(spec), spec), spec.units);
  for (const Segments& plan : std::vector<Segments>{{}, {{0, 0}}, {{1, 1}}, {{2, 2}}, {{0, 1}}, {{0, 2}},
                                                    {{0, 0}, {1, 2}}}) {
    EXPECT_EQ(late.simPeak(plan), clean.simPeak(plan));
    EXPECT_EQ(evaluateChain(late.chain, plan).peak, evaluateChain(clean.chain, plan).peak);
  }
}

TEST(LateBackwardEnd, SiblingBranchesOfOneBlockAreRefused) {
  // The same windows under the names of one block's sub-modules.
  ChainSpec spec;
  std::vector<std::string> names = {"layer1.0.conv3", "layer1.0.bn3", "layer1.0.downsample"};
  RunLayout layout = stepLayouts(renamed(nestedBackwards(spec), names), names);
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem,
            "backward of layer1.0.bn3 starts before layer1.0.downsample's ends");
}

TEST(LateBackwardEnd, AWindowNestingOneThatEndsEarlierIsRefused) {
  // Only layers.2 ends late (with layers.0, as downsample ends with conv1);
  // layers.1 ends in its own time.
  ChainSpec spec;
  Trace t = withOutsideInput(testing::chainTrace(spec), spec);
  for (Range& r : t.ranges)
    if (r.phase == Phase::Backward && r.name == testing::unitName(2))
      r.end = testing::backwardStart(spec, 0, 0) + 40;
  RunLayout layout = stepLayouts(t, testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem, "backward of layers.1 starts before layers.2's ends");
}

TEST(LateBackwardEnd, UnitsPassedOnlyThePreviousOutputAreRefused) {
  ChainSpec spec;
  Trace t = nestedBackwards(spec);
  for (Range& r : t.ranges)
    if (r.phase == Phase::Forward) r.input_bytes = spec.output;
  RunLayout layout = stepLayouts(t, testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem, "backward of layers.1 starts before layers.2's ends");
}

TEST(LateBackwardEnd, BackwardsOutOfOrderAreStillRefused) {
  // layers.1's backward starting before layers.2's is not a late end.
  ChainSpec spec;
  Trace t = withOutsideInput(testing::chainTrace(spec), spec);
  for (Range& r : t.ranges)
    if (r.phase == Phase::Backward && r.name == testing::unitName(1)) r.start = testing::backwardStart(spec, 0, 2) - 5;
  testing::sortAsLoaded(t);
  RunLayout layout = stepLayouts(t, testing::unitNames(spec.units));
  EXPECT_EQ(layout.complete, 0u);
  EXPECT_EQ(layout.steps.front().problem, "backward of layers.1 starts before layers.2's ends");
}

}  // namespace
}  // namespace gcprof::advisor
