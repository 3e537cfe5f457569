#include "simulate/replay_simulator.h"

#include <gtest/gtest.h>

#include "chain_run.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;
using testing::unitName;
using Fixture = testing::ChainRun;

// Three units of 50 transient + 200 saved + 100 output bytes over 1000 bytes
// of parameters. Worked out by hand in the comments below.
TEST(ReplaySimulator, WorkedChainOfThree) {
  Fixture f(ChainSpec{});
  // Baseline: parameters + 3 x (saved + output) at the end of the forward.
  EXPECT_EQ(f.simPeak({}), 1900);
  EXPECT_EQ(memoryCurve(f.trace).peak, 1900);
  // Every unit: each saves 200 less; the last forward ends at
  // 1000 + 2 x 100 (kept outputs) + 300 = 1500 just before its drop.
  EXPECT_EQ(f.simPeak({{0, 0}, {1, 1}, {2, 2}}), 1500);
  // Region [0..1]: drops 2 x 200 + the inner output (100). The replay at
  // layers.1's backward starts from 1010 (after layers.2's backward) and
  // re-makes 600 bytes: 1610.
  EXPECT_EQ(f.simPeak({{0, 1}}), 1610);
  // One segment over everything saves nothing at the peak.
  EXPECT_EQ(f.simPeak({{0, 2}}), 1900);
}

// A search asking only whether a plan fits: the walk stops where the peak
// passes the limit, and a plan at the limit is simulated whole, the same.
TEST(ReplaySimulator, StopsWhereThePeakPassesTheLimit) {
  ChainSpec spec;
  spec.steps = 3;
  Fixture f(spec);
  const Segments plan = {{0, 1}};
  const Simulation whole = simulate(f.trace, f.filter, f.layout, plan);
  EXPECT_FALSE(whole.stopped);
  SimulationOptions o;
  o.stop_above = whole.peak;
  const Simulation at = simulate(f.trace, f.filter, f.layout, plan, o);
  EXPECT_FALSE(at.stopped);
  EXPECT_EQ(at.peak, whole.peak);
  EXPECT_EQ(at.peak_at, whole.peak_at);
  EXPECT_EQ(at.step_ns, whole.step_ns);
  EXPECT_EQ(at.events, whole.events);
  o.stop_above = whole.peak - 1;
  EXPECT_TRUE(simulate(f.trace, f.filter, f.layout, plan, o).stopped);
}

TEST(ReplaySimulator, ParametersAndGradientsAreUntouched) {
  Fixture f(ChainSpec{});
  SimulationOptions o;
  o.want_curve = true;
  Simulation none = simulate(f.trace, f.filter, f.layout, {}, o);
  Simulation every = simulate(f.trace, f.filter, f.layout, {{0, 0}, {1, 1}, {2, 2}}, o);
  // Parameters + 3 gradients live at the end either way.
  EXPECT_EQ(none.curve.back().live, 1030);
  EXPECT_EQ(every.curve.back().live, 1030);
  // Before the first forward nothing differs.
  EXPECT_EQ(none.curve.front().live, 1000);
  EXPECT_EQ(every.curve.front().live, 1000);
}

TEST(ReplaySimulator, RecomputeTimeShiftsTheStep) {
  Fixture f(ChainSpec{});
  Simulation none = simulate(f.trace, f.filter, f.layout, {});
  Simulation every = simulate(f.trace, f.filter, f.layout, {{0, 0}, {1, 1}, {2, 2}});
  Simulation region = simulate(f.trace, f.filter, f.layout, {{0, 1}});
  EXPECT_EQ(none.recompute_ns, 0);
  EXPECT_EQ(every.recompute_ns, 3 * 40);
  EXPECT_EQ(region.recompute_ns, 40 + 60 + 40);  // two forwards and the gap between them
  EXPECT_EQ(every.step_ns, none.step_ns + 120);
  EXPECT_EQ(f.chain.recomputeNs(0, 1), 140);
  EXPECT_EQ(evaluateChain(f.chain, {{0, 1}}).recompute_ns, 140);
}

TEST(ReplaySimulator, AppliesThePlanToEveryCompleteStep) {
  ChainSpec spec;
  spec.steps = 3;
  Fixture f(spec);
  Simulation every = simulate(f.trace, f.filter, f.layout, {{0, 0}, {1, 1}, {2, 2}});
  EXPECT_EQ(every.steps_applied, 3u);
  EXPECT_EQ(every.total_recompute_ns, 3 * 120);
  // Gradients accumulate across steps (never freed): 1000 + 2 x 30 at step 2's start.
  EXPECT_EQ(every.peak, 1500 + 60);
  EXPECT_EQ(f.simPeak({}), 1900 + 60);
}

TEST(UnitChain, WorkedChainOfThree) {
  Fixture f(ChainSpec{});
  const UnitChain& c = f.chain;
  ASSERT_EQ(c.size(), 3);
  EXPECT_EQ(c.saved, (std::vector<Bytes>{200, 200, 200}));
  EXPECT_EQ(c.droppedBytes(0, 1), 500);
  EXPECT_EQ(c.droppedBytes(0, 2), 800);
  EXPECT_EQ(c.baseline_peak, 1900);
  EXPECT_EQ(c.outside, 1000);  // parameters, before the first forward
  EXPECT_EQ(c.forward_ns, (std::vector<Ns>{40, 40, 40}));
  EXPECT_EQ(evaluateChain(c, {}).peak, 1900);
}

// On a trace this clean the chain model is exact: it agrees with the
// simulator on every plan of every shape.
TEST(UnitChain, AgreesWithTheSimulatorOnEveryPlan) {
  ChainSpec spec;
  spec.units = 5;
  spec.steps = 2;
  Fixture f(spec);
  int n = spec.units;
  // Enumerate all plans: each unit starts a segment, continues one, or is left alone.
  std::vector<int> choice(n, 0);
  int plans = 0;
  while (true) {
    Segments plan;
    bool valid = true;
    for (int k = 0; k < n && valid; ++k) {
      if (choice[k] == 1) plan.push_back({k, k});
      if (choice[k] == 2) {
        if (plan.empty() || plan.back().last != k - 1) valid = false;
        else plan.back().last = k;
      }
    }
    if (valid) {
      ++plans;
      EXPECT_EQ(evaluateChain(f.chain, plan).peak, f.simPeak(plan)) << "plan #" << plans;
    }
    int k = 0;
    while (k < n && ++choice[k] == 3) choice[k++] = 0;
    if (k == n) break;
  }
  EXPECT_GT(plans, 50);
}

// A unit that ends in an in-place module (ResNet's `relu_(out + identity)`)
// saves its own output, so the trace shows that output freed early in the
// unit's backward like a saved tensor; checkpointing the unit does not free
// it, because the next unit holds it as its input (ResNet-50's
// plans measured exactly their blocks' outputs over the prediction).
TEST(ReplaySimulator, AnOutputSavedInPlaceIsKeptByItsConsumer) {
  auto endsInPlace = [](bool marked) {
    Trace t = chainTrace(ChainSpec{});
    testing::inPlaceActivation(t, ChainSpec{}, 0, marked);
    return Fixture(std::move(t), 3);
  };
  Fixture kept = endsInPlace(true);
  // Baseline unchanged: parameters + 3 x (saved + output) at the forward's end.
  EXPECT_EQ(kept.simPeak({}), 1900);
  // Checkpointing layers.0 frees its 200 saved bytes only: the output stays.
  EXPECT_EQ(kept.simPeak({{0, 0}}), 1700);
  // Without the in-place record the output looks saved and is dropped too.
  EXPECT_EQ(endsInPlace(false).simPeak({{0, 0}}), 1600);
  // A unit that does not end in place keeps the old answer: layers.1 drops
  // its 200 saved bytes (its output is freed in layers.2's backward).
  EXPECT_EQ(kept.simPeak({{1, 1}}), 1700);
}

// Memory a library allocates on first use and keeps (torch's CPU matmul
// buffers in HF BART's first step, memory/cache_allocations.h): born in a
// unit's forward, never freed. A replay finds it and does not make it again.
TEST(ReplaySimulator, MemoryNeverFreedIsNotMadeAgainByAReplay) {
  ChainSpec spec;
  Trace t = chainTrace(spec);
  testing::addAllocation(t, testing::forwardStart(spec, 0, 0) + 25, -1, 500);
  Fixture f(std::move(t), 3);
  EXPECT_EQ(f.simPeak({}), 1900 + 500);
  // As without it (1500), plus the 500 kept: replaying layers.0 at its
  // backward (1000 + 500 + 20 of gradients + 350) stays below.
  EXPECT_EQ(f.simPeak({{0, 0}, {1, 1}, {2, 2}}), 1500 + 500);
  EXPECT_EQ(evaluateChain(f.chain, {{0, 0}, {1, 1}, {2, 2}}).peak, 1500 + 500);
  EXPECT_EQ(evaluateChain(f.chain, {{0, 1}}).peak, f.simPeak({{0, 1}}));
}


// The C++ runtime's checkpoint is reentrant (chain/reentrant_holds.h): its
// backward holds the gradient of the segment's output, with which it was
// called, and the replayed output until the nested backward ends. The
// recorded run freed that gradient early in the unit's backward (resnet_train's
// final relu_ makes a new one); before this the simulator freed both early
// and resnet_train's `every` measured 23% (3 block outputs) over it.
TEST(ReplaySimulator, AReentrantCheckpointHoldsItsOutputAndItsGradientToItsBackwardEnd) {
  ChainSpec spec;
  spec.units = 2;
  spec.transient = 0;
  spec.grad = 0;
  auto run = [&](const std::string& runtime) {
    spec.runtime = runtime;
    Trace t = chainTrace(spec);
    Ns b1 = testing::backwardStart(spec, 0, 1), b0 = testing::backwardStart(spec, 0, 0);
    testing::addAllocation(t, b1 + 30, b0 + 5, 100);   // layers.0's output gradient, made in layers.1's backward
    testing::addAllocation(t, b0 + 10, b0 + 20, 300);  // a temporary of layers.0's backward
    return Fixture(std::move(t), 2);
  };
  // layers.0 checkpointed: its replay re-makes 200 saved + 100 output over
  // 1000 parameters and 100 of gradient (1400); then the temporary.
  // Non-reentrant (python): the replayed output goes as the replay ends and
  // the gradient when the recorded run freed it: 1000 + 200 + 300.
  Fixture python = run("python");
  EXPECT_EQ(python.simPeak({{0, 0}}), 1500);
  // Reentrant: both are still held when the temporary is made.
  Fixture native = run("native");
  EXPECT_EQ(native.simPeak({{0, 0}}), 1700);
  // The chain model never promises less than the simulator.
  EXPECT_GE(evaluateChain(native.chain, {{0, 0}}).peak, 1700);
  // Without a plan nothing changes.
  EXPECT_EQ(native.simPeak({}), python.simPeak({}));
}

// The peak, its moment and the events walked: what two ways of simulating
// one plan must agree on.
void expectTheSamePeak(const Simulation& a, const Simulation& b, const Segments& plan) {
  SCOPED_TRACE("a plan of " + std::to_string(plan.size()) + " segments");
  EXPECT_EQ(a.peak, b.peak);
  EXPECT_EQ(a.peak_time, b.peak_time);
  EXPECT_EQ(a.peak_at, b.peak_at);
  EXPECT_EQ(a.peak_replay_offset, b.peak_replay_offset);
  EXPECT_EQ(a.events, b.events);
}

// advise sorts the recorded events once and hands them to every simulation
// (SimulationOptions::recorded), which merges a plan's own events into them:
// the same simulation, curve and peak moment included, as one that sorts
// everything itself.
TEST(ReplaySimulator, SharedRecordedEventsSimulateTheSame) {
  ChainSpec spec;
  spec.units = 4;
  spec.steps = 3;
  Fixture f(spec);
  RecordedEvents recorded(f.trace.allocations, f.filter);
  for (const Segments& plan : std::vector<Segments>{{}, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, {{0, 1}}, {{1, 3}}}) {
    SimulationOptions own;
    own.want_curve = true;
    SimulationOptions shared = own;
    shared.recorded = &recorded;
    Simulation a = simulate(f.trace, f.filter, f.layout, plan, own);
    Simulation b = simulate(f.trace, f.filter, f.layout, plan, shared);
    expectTheSamePeak(a, b, plan);
    EXPECT_EQ(a.recompute_ns, b.recompute_ns);
    EXPECT_EQ(a.step_ns, b.step_ns);
    ASSERT_EQ(a.curve.size(), b.curve.size());
    for (size_t i = 0; i < a.curve.size(); ++i) {
      EXPECT_EQ(a.curve[i].time, b.curve[i].time) << i;
      EXPECT_EQ(a.curve[i].live, b.curve[i].live) << i;
    }
  }
}

// A simulation without a curve passes the stretches of recorded events
// between a plan's own at once (RecordedEvents::Block); with a curve it
// walks every event. Long steps (40 units: hundreds of recorded events
// between the events of a plan of one segment) give both the same peak.
TEST(ReplaySimulator, RecordedStretchesPassedAtOnceSimulateTheSame) {
  ChainSpec spec;
  spec.units = 40;
  spec.steps = 4;
  Fixture f(spec);
  RecordedEvents recorded(f.trace.allocations, f.filter);
  Segments every;
  for (int k = 0; k < spec.units; ++k) every.push_back({k, k});
  for (const Segments& plan : std::vector<Segments>{{}, {{0, 0}}, {{5, 9}}, {{39, 39}}, {{0, 0}, {20, 30}}, every}) {
    SimulationOptions walked;
    walked.want_curve = true;
    walked.recorded = &recorded;
    SimulationOptions passed;
    passed.recorded = &recorded;
    Simulation a = simulate(f.trace, f.filter, f.layout, plan, walked);
    Simulation b = simulate(f.trace, f.filter, f.layout, plan, passed);
    expectTheSamePeak(a, b, plan);
  }
}

}  // namespace
}  // namespace gcprof::advisor
