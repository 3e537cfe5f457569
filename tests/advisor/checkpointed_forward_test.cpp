// What a checkpointed forward frees early (chain/checkpointed_forward.h): a
// sub-module's allocation that autograd kept in the recording but the module
// did not return is freed when the module returns, in the simulator too.
#include "chain/checkpointed_forward.h"

#include <gtest/gtest.h>

#include "chain/chain_peak.h"
#include "chain/unit_chain.h"
#include "simulate/early_frees.h"
#include "simulate/replay_simulator.h"
#include "units/step_layout.h"
#include "solve/optimal_solver.h"
#include "chain_run.h"

namespace gcprof::advisor {
namespace {

// Unit "a": forward [100, 300], backward [500, 700], over 10000 bytes of
// parameters. Its sub-module "a.f" runs [110, 200] and returns `f_out`
// bytes; inside it "a.f.g" runs [115, 150] and returns 1000 bytes:
//   X = 1000 at 120 (in g), freed at 600: kept by autograd, g's output
//   Y =  100 at 190 (in f), freed at 650: kept, f's output
//   W = 2000 at 250 (in a itself), freed at 280: a workspace
// and, when `before` > 0, V = `before` bytes made at 50, before the unit,
// and freed at 260 in its forward: not replayed.
Trace nested(Bytes f_out, Bytes before = 0) {
  testing::TraceBuilder b;
  b.step(0, 0, 800);
  b.range("a", Phase::Forward, 100, 300);
  b.range("a.f", Phase::Forward, 110, 200, 0, -1, 100, f_out);
  b.range("a.f.g", Phase::Forward, 115, 150, 0, -1, 100, 1000);
  b.range("a", Phase::Backward, 500, 700);
  b.alloc(1, -1, 10000);
  b.alloc(120, 600, 1000);
  b.alloc(190, 650, 100);
  b.alloc(250, 280, 2000);
  if (before > 0) b.alloc(50, 260, before);
  return b.build();
}

const Allocation& bornAt(const Trace& t, Ns at) {
  for (const Allocation& a : t.allocations)
    if (a.alloc == at) return a;
  throw std::runtime_error("no allocation");
}

using testing::ChainRun;
using testing::liveAt;

TEST(CheckpointedForward, WhatASubModuleDoesNotReturnIsFreedWhenItReturns) {
  Trace t = nested(100);  // f returns only Y
  AllocationFilter filter = primaryFilter(t);
  CheckpointedForward fwd(t, filter);
  // X is g's output (g returned it), not f's: freed when f returns.
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), 100, 300), 200);
  // Y is f's output: it lives to the unit's end.
  EXPECT_EQ(fwd.freeTime(bornAt(t, 190), 100, 300), 300);
  // W was made by the unit itself, outside any sub-module.
  EXPECT_EQ(fwd.freeTime(bornAt(t, 250), 100, 300), 300);
}

// Only a sub-module on the allocation's own thread made it: X born at 120
// on another thread (a data loader's) is not g's or f's, whatever the times.
TEST(CheckpointedForward, OnlyAModuleOnTheAllocationsThreadMadeIt) {
  Trace t = nested(100);
  for (Allocation& a : t.allocations)
    if (a.alloc == 120) a.context = t.contexts.intern({0, 9});
  CheckpointedForward fwd(t, primaryFilter(t));
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), 100, 300), 300);
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), fwd.window(100, 300)), 300);
  EXPECT_EQ(fwd.freeTime(bornAt(t, 190), 100, 300), 300);  // Y, on the modules' thread: f's output
}

// The unit's window searched once (chain_peak's questions, one unit at a
// time): the same answers, also for rows born outside it.
TEST(CheckpointedForward, AWindowAnswersAsTheUnitsTimes) {
  Trace t = nested(100);
  CheckpointedForward fwd(t, primaryFilter(t));
  for (auto [start, end] : std::vector<std::pair<Ns, Ns>>{{100, 300}, {110, 200}, {150, 260}, {0, 1000}}) {
    const CheckpointedForward::Window w = fwd.window(start, end);
    for (const Allocation& a : t.allocations)
      EXPECT_EQ(fwd.freeTime(a, w), fwd.freeTime(a, start, end)) << a.alloc << " in " << start << ".." << end;
  }
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), fwd.window(100, 300)), 200);
}

TEST(CheckpointedForward, OutputsCoverTheReturnedBytesLatestFirst) {
  // f returns 1100 bytes: Y (latest) and then X, both its outputs.
  Trace t = nested(1100);
  CheckpointedForward fwd(t, primaryFilter(t));
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), 100, 300), 300);
  EXPECT_EQ(fwd.freeTime(bornAt(t, 190), 100, 300), 300);
}

TEST(CheckpointedForward, ModulesWithoutOutputBytesFreeNothingEarly) {
  Trace t = nested(0);  // no output bytes recorded for f (C++ runtime, old traces)
  CheckpointedForward fwd(t, primaryFilter(t));
  EXPECT_EQ(fwd.freeTime(bornAt(t, 120), 100, 300), 300);
}

TEST(CheckpointedForward, TheSimulatorFreesDroppedBytesWhenTheSubModuleReturns) {
  ChainRun run(nested(100), {"a"});
  Simulation plain = run.curve({});
  Simulation ckpt = run.curve({{0, 0}});
  // Not checkpointed: autograd keeps X through the workspace.
  EXPECT_EQ(liveAt(plain, 260), 10000 + 1000 + 100 + 2000);
  EXPECT_EQ(plain.peak, 13100);
  // Checkpointed: X is gone when f returns, before the workspace.
  EXPECT_EQ(liveAt(ckpt, 210), 10000 + 100);
  EXPECT_EQ(liveAt(ckpt, 260), 10000 + 100 + 2000);
  // The replay re-makes X, Y and W: 13100 at the backward.
  EXPECT_EQ(ckpt.peak, 13100);
  ChainRun unknown(nested(0), {"a"});
  EXPECT_EQ(liveAt(unknown.curve({{0, 0}}), 260), 10000 + 1000 + 100 + 2000);
}

TEST(CheckpointedForward, TheChainPricesTheCheckpointedForwardAsTheSimulator) {
  // V (5000) makes the forward the plan's peak: 10000 + V + X + Y + W =
  // 18100 as recorded, 17100 checkpointed (X freed when f returns); the
  // replay reaches only 13100.
  ChainRun run(nested(100, 5000), {"a"});
  const UnitChain& chain = run.chain;
  EXPECT_EQ(chain.unit_peak[0], 18100);
  EXPECT_EQ(chain.checkpointed_forward_peak[0], 17100);
  Segments plan = {{0, 0}};
  EXPECT_EQ(run.simPeak(plan), 17100);
  EXPECT_EQ(evaluateChain(chain, plan).peak, 17100);
  // A what-if's chain carries no checkpointed forward: the recorded one.
  UnitChain scaled = chain;
  scaled.checkpointed_forward_peak.clear();
  EXPECT_EQ(evaluateChain(scaled, plan).peak, 18100);
  // The solver sees it too: 17100 fits with the unit checkpointed.
  Solution s = solveOptimal(chain, 17100, SolverOptions{});
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.peak, 17100);
  EXPECT_EQ(s.segments.size(), 1u);
}

// The plans of one advice share the answers (simulate/early_frees.h): the
// same as asking freeTime, the first time and from memory after.
TEST(CheckpointedForward, EarlyFreesRememberFreeTimesAcrossPlans) {
  Trace t = nested(100);
  CheckpointedForward fwd(t, primaryFilter(t));
  RunLayout layout = stepLayouts(t, {"a"});
  ASSERT_TRUE(layout.steps.at(0).complete);
  const StepLayout& step = layout.steps[0];
  StepRegions reg(step);
  EarlyFrees early(t.allocations, layout.steps.size());
  for (int ask = 0; ask < 2; ++ask) {
    EXPECT_EQ(early.freeTime(fwd, 0, reg, bornAt(t, 120), step.units[0]), 200);
    EXPECT_EQ(early.freeTime(fwd, 0, reg, bornAt(t, 190), step.units[0]), 300);
    EXPECT_EQ(early.freeTime(fwd, 0, reg, bornAt(t, 250), step.units[0]), 300);
  }
}

}  // namespace
}  // namespace gcprof::advisor
