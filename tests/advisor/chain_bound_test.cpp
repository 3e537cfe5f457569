// The unit-chain model is what the solvers optimise; the replay simulator is
// what plans predict. The model must never promise less memory than the
// simulator finds, whatever the trace: here on messy random traces (random
// lifetimes crossing units, steps and regions, equal timestamps, memory that
// is never freed), for every plan.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>

#include "chain_run.h"

namespace gcprof::advisor {
namespace {

Trace messyTrace(int units, int steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  testing::ChainSpec spec;
  spec.units = units;
  spec.steps = steps;
  Trace t = testing::chainTrace(spec);  // ranges, steps and a clean base load
  Ns S = testing::stepSpan(spec);
  std::uniform_int_distribution<int> bytes(1, 400), pct(0, 99);
  for (int s = 0; s < steps; ++s) {
    Ns o = testing::stepStart(spec, s);
    std::uniform_int_distribution<Ns> when(o, o + S - 1);
    for (int i = 0; i < 80; ++i) {
      Allocation a;
      a.id = static_cast<int64_t>(t.allocations.size()) + 1;
      a.bytes = bytes(rng);
      a.alloc = when(rng) / 5 * 5;  // a coarse grid: many equal timestamps
      int kind = pct(rng);
      if (kind < 10) a.free = -1;
      else if (kind < 20) a.free = a.alloc + S;  // into the next step
      else a.free = std::uniform_int_distribution<Ns>(a.alloc, o + S - 1)(rng) / 5 * 5;
      t.allocations.push_back(a);
    }
  }
  testing::sortAsLoaded(t);
  return t;
}

TEST(ChainBound, ModelNeverPromisesLessThanTheSimulator) {
  int n = 5;
  int plans = 0;
  double worst_over = 0;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    testing::ChainRun run(messyTrace(n, 2, seed), n);
    const UnitChain& c = run.chain;
    EXPECT_EQ(evaluateChain(c, {}).peak, memoryCurve(run.trace).peak) << "seed " << seed;
    Segments plan;
    std::function<void(int)> each = [&](int k) {
      if (k == n) {
        Bytes model = evaluateChain(c, plan).peak;
        Bytes sim = run.simPeak(plan);
        EXPECT_GE(model, sim) << "seed " << seed << ", " << plan.size() << " segments";
        worst_over = std::max(worst_over, static_cast<double>(model - sim) / static_cast<double>(sim));
        ++plans;
        return;
      }
      each(k + 1);
      for (int j = k; j < n; ++j) {
        plan.push_back({k, j});
        each(j + 1);
        plan.pop_back();
      }
    };
    each(0);
  }
  EXPECT_GT(plans, 1000);
  std::printf("%d plans on messy traces: the model is at most %.1f%% above the simulator\n", plans,
              worst_over * 100);
}

}  // namespace
}  // namespace gcprof::advisor
