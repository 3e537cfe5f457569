#include "simulate/simulation_memo.h"

#include <gtest/gtest.h>

#include "chain_run.h"

namespace gcprof::advisor {
namespace {

using testing::ChainSpec;
using Fixture = testing::ChainRun;

TEST(SimulationMemo, RemembersEachPlanAsSimulated) {
  ChainSpec spec;
  spec.units = 4;
  spec.steps = 2;
  Fixture f(spec);
  SimulationMemo memo;
  for (const Segments& plan : std::vector<Segments>{{{0, 1}}, {{1, 3}}, {{0, 1}}, {{0, 0}, {1, 1}}}) {
    Simulation direct = simulate(f.trace, f.filter, f.layout, plan);
    Simulation remembered = memo.simulate(f.trace, f.filter, f.layout, plan, {});
    EXPECT_EQ(direct.peak, remembered.peak);
    EXPECT_EQ(direct.peak_at, remembered.peak_at);
    EXPECT_EQ(direct.recompute_ns, remembered.recompute_ns);
    EXPECT_EQ(direct.step_ns, remembered.step_ns);
  }
}

// A simulation stopped at a limit answers only that the plan passes it: a
// later question for the whole simulation is not answered from it.
TEST(SimulationMemo, AStoppedSimulationIsNotTheWholeOne) {
  Fixture f(ChainSpec{});
  SimulationMemo memo;
  const Segments plan = {{0, 1}};
  const Simulation whole = simulate(f.trace, f.filter, f.layout, plan);
  SimulationOptions stop;
  stop.stop_above = whole.peak - 1;
  EXPECT_TRUE(memo.simulate(f.trace, f.filter, f.layout, plan, stop).stopped);
  const Simulation after = memo.simulate(f.trace, f.filter, f.layout, plan, {});
  EXPECT_FALSE(after.stopped);
  EXPECT_EQ(after.peak, whole.peak);
  // And the whole one answers a question with a limit it does not pass.
  stop.stop_above = whole.peak;
  EXPECT_EQ(memo.simulate(f.trace, f.filter, f.layout, plan, stop).peak, whole.peak);
}

// A copy is for another layout (finer units): it must not answer from the
// original's simulations.
TEST(SimulationMemo, ACopyStartsEmpty) {
  ChainSpec spec;
  spec.units = 4;
  Fixture f(spec);
  ChainSpec other = spec;
  other.saved = 5000;
  Fixture g(other);
  SimulationMemo memo;
  Segments plan = {{0, 3}};
  memo.simulate(f.trace, f.filter, f.layout, plan, {});
  SimulationMemo copy = memo;
  EXPECT_EQ(copy.simulate(g.trace, g.filter, g.layout, plan, {}).peak, simulate(g.trace, g.filter, g.layout, plan).peak);
  EXPECT_NE(simulate(g.trace, g.filter, g.layout, plan).peak, simulate(f.trace, f.filter, f.layout, plan).peak);
}

}  // namespace
}  // namespace gcprof::advisor
