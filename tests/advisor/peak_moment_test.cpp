// advise names the moment a plan peaks from the replay simulator (the truth
// it reports), not from the chain model, which is an envelope over steps and
// can put the same plan's peak somewhere no step has it.
#include "simulate/peak_moment.h"

#include <gtest/gtest.h>

#include "chain_run.h"
#include "plan/advice.h"

namespace gcprof::advisor {
namespace {

using testing::ChainRun;
using testing::ChainSpec;

std::string moment(const ChainRun& run, const Segments& plan) {
  return peakMoment(run.layout, plan, run.simulate(plan)).describe(run.chain.names);
}

TEST(PeakMoment, NamesTheUnitThePhaseAndTheStep) {
  ChainSpec spec;
  spec.steps = 2;
  ChainRun run(spec);
  // Recorded: the end of the forward, before the last output is freed; the
  // first step to reach it (step 1 is higher by step 0's gradients).
  EXPECT_EQ(moment(run, {}), "in the forward of layers.2, step 1");
  // Every unit: the last forward just before its drop (ReplaySimulator.WorkedChainOfThree).
  EXPECT_EQ(moment(run, {{0, 0}, {1, 1}, {2, 2}}), "in the forward of layers.2, step 1");
  // Region [0..1]: replaying it at layers.1's backward, where layers.1's output is re-made.
  PeakMoment m = peakMoment(run.layout, {{0, 1}}, run.simulate({{0, 1}}));
  EXPECT_EQ(m.kind, PeakMoment::Kind::Recompute);
  EXPECT_EQ(m.unit, 1);
  EXPECT_EQ(m.step, 1);
  EXPECT_EQ(m.describe(run.chain.names), "recomputing layers.1 of the segment layers.0..layers.1, step 1");
}

// Step 0 runs a 500-byte transient inside layers.0's forward; step 1 holds
// 500 bytes from between its forward and backward until after its last
// backward. The chain adds the worst of each over the steps for layers.0's
// recomputation (entry level from step 1, replay from step 0) and names
// that; no step has both, and the simulator's peak is in step 1 between the
// forward and the backward, before the last output is freed (closing4:
// "recomputing layer1.0" for ResNet-50's peak in layer2.0's backward).
Trace stepsThatDiffer(const ChainSpec& spec) {
  Trace t = testing::chainTrace(spec);
  Ns f0 = testing::forwardStart(spec, 0, 0);
  testing::addAllocation(t, f0 + 25, f0 + 28, 500, 0);
  Ns mid = testing::forwardStart(spec, 1, spec.units - 1) + spec.forward + 60;
  testing::addAllocation(t, mid, testing::backwardStart(spec, 1, 0) + 60, 500, 1);
  return t;
}

TEST(PeakMoment, AdviseNamesTheSimulatorsMomentWhereTheChainNamesAnother) {
  ChainSpec spec;
  spec.steps = 2;
  Trace t = stepsThatDiffer(spec);
  ChainRun run(t, spec.units);
  Segments first = {{0, 0}};
  ChainPeak chain = evaluateChain(run.chain, first);
  Simulation sim = run.simulate(first);
  EXPECT_EQ(whereOf(run.chain, chain), "recomputing layers.0");
  EXPECT_EQ(chain.peak, 2250);
  // Parameters 1000, step 0's gradients 30, the outputs 300, the saved bytes
  // of layers.1 and layers.2 400 and step 1's 500.
  EXPECT_EQ(sim.peak, 2230);
  PeakMoment m = peakMoment(run.layout, first, sim);
  EXPECT_EQ(m.kind, PeakMoment::Kind::AfterForward);
  EXPECT_EQ(m.unit, 2);
  EXPECT_EQ(m.step, 1);

  AdviceRequest req;
  req.strategy = Strategy::None;
  Advice a = advise(t, req);
  PlanOutcome o = outcomeOf(t, a, "layers.0", first);
  EXPECT_EQ(o.peak, 2230);
  EXPECT_EQ(o.chain_peak, 2250);
  EXPECT_EQ(o.peak_where, "between the last forward and the first backward, step 1");
  EXPECT_EQ(a.chosen.peak_where, "between the last forward and the first backward, step 1");  // recorded
}

}  // namespace
}  // namespace gcprof::advisor
