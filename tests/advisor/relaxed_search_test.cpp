// The unit chain prices each quantity at its worst step and each
// drop at its smallest (unit_chain.h), so when the recorded steps differ a
// plan can simulate below its chain price, and the solver's answer at the
// budget misses cheaper plans the simulator fits. advise re-solves at the
// budget plus the chain's excess over the simulator and keeps what the
// simulator fits (plan/advice.cpp, relaxToSimulator).
#include <gtest/gtest.h>

#include "chain_traces.h"
#include "chain/chain_peak.h"
#include "plan/advice.h"
#include "simulate/replay_simulator.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;

// Two steps of 3 units. Step 1's unit 0 saves 400 bytes for its backward,
// step 0's 200: in each step checkpointing unit 0 lowers the moments after
// its forward by what it saved there, but the chain takes the moments at
// step 1's height and the drop at step 0's (the smallest, what every step
// is sure to drop), 200 bytes above both steps. Unit 0's forward is the
// shortest (40 ns against 60), so checkpointing it alone is the cheapest
// plan below the recorded peak.
constexpr Bytes kSmallSave = 200, kLargeSave = 400;

Trace stepsThatDiffer() {
  ChainSpec c;
  c.units = 3;
  c.steps = 2;
  c.grad = 0;
  c.saved = kSmallSave;
  Trace t = chainTrace(c);
  Ns f = testing::forwardStart(c, 1, 0);
  for (Allocation& a : t.allocations)
    if (a.step == 1 && a.alloc == f + 20 && a.bytes == kSmallSave) a.bytes = kLargeSave;
  for (Range& r : t.ranges)
    if (r.phase == Phase::Forward && r.name != testing::unitName(0)) r.end += 20;
  return t;
}

AdviceRequest exactlyAt(Bytes budget) {
  AdviceRequest r;
  r.budget = Budget::size(budget);
  r.headroom.given = true;  // 0: the plans are solved to the budget itself
  return r;
}

const Segments kFirstUnit = {Segment(0, 0)};

// The simulated peak of checkpointing the first unit alone.
Bytes firstUnitPeak(const Trace& t) {
  AdviceRequest none;
  none.strategy = Strategy::None;
  Advice probe = advise(t, none);
  return simulate(t, probe.filter, probe.layout, kFirstUnit).peak;
}

TEST(RelaxedSearch, TheChainOverPricesAPlanWhoseStepsDiffer) {
  Trace t = stepsThatDiffer();
  AdviceRequest none;
  none.strategy = Strategy::None;
  Advice a = advise(t, none);
  Simulation sim = simulate(t, a.filter, a.layout, kFirstUnit);
  EXPECT_EQ(evaluateChain(a.chain, kFirstUnit).peak - sim.peak, kLargeSave - kSmallSave);
}

TEST(RelaxedSearch, FindsTheCheaperPlanTheSimulatorFits) {
  Trace t = stepsThatDiffer();
  Bytes fits_exactly = firstUnitPeak(t);

  Advice a = advise(t, exactlyAt(fits_exactly));
  ASSERT_TRUE(a.feasible) << a.message;
  EXPECT_EQ(a.chosen.peak, fits_exactly);
  EXPECT_EQ(a.chosen.segments, kFirstUnit) << "checkpointed " << a.chosen.segments.size() << " segments";
  // One unit's forward, the least any plan below the recorded peak recomputes.
  EXPECT_EQ(a.chosen.recompute_ns, a.chain.forward_ns[0]);
  EXPECT_LT(a.chosen.recompute_ns, a.every.recompute_ns);
}

// The relaxed searches ask the simulator only whether a plan fits: one
// that does not is answered by none (its simulation stopped at the limit),
// one that does by its whole outcome.
TEST(RelaxedSearch, APlanIsAnsweredOnlyWhenItFits) {
  Trace t = stepsThatDiffer();
  Bytes fits_exactly = firstUnitPeak(t);
  Advice a = advise(t, exactlyAt(fits_exactly));
  std::optional<PlanOutcome> fits = outcomeIfFits(t, a, "first", kFirstUnit);
  ASSERT_TRUE(fits.has_value());
  PlanOutcome whole = outcomeOf(t, a, "first", kFirstUnit);
  EXPECT_EQ(fits->peak, whole.peak);
  EXPECT_EQ(fits->peak_where, whole.peak_where);
  EXPECT_EQ(fits->recompute_ns, whole.recompute_ns);
  Advice tight = advise(t, exactlyAt(fits_exactly - 1));
  EXPECT_FALSE(outcomeIfFits(t, tight, "first", kFirstUnit).has_value());
  EXPECT_FALSE(outcomeOf(t, tight, "first", kFirstUnit).fits);
}

// The relaxed searches' answers are only kept when the simulator fits them:
// at every budget the chosen plan fits, and recomputes no more than `every`.
TEST(RelaxedSearch, EveryAnswerFitsTheSimulator) {
  Trace t = stepsThatDiffer();
  for (Bytes budget = 1450; budget <= 2100; budget += 50) {
    Advice a = advise(t, exactlyAt(budget));
    if (!a.feasible) continue;
    EXPECT_LE(a.chosen.peak, budget) << budget;
    if (a.every.fits) {
      EXPECT_LE(a.chosen.recompute_ns, a.every.recompute_ns) << budget;
    }
  }
}

}  // namespace
}  // namespace gcprof::advisor
