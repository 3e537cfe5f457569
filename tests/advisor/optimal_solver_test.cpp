#include "solve/optimal_solver.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <functional>

#include "random_chain.h"
#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

// Every plan of n units: single-unit segments only (module) or any runs of
// consecutive units (region).
void forEachPlan(int n, SegmentKind kind, const std::function<void(const Segments&)>& visit) {
  Segments plan;
  std::function<void(int)> rec = [&](int k) {
    if (k == n) {
      visit(plan);
      return;
    }
    rec(k + 1);  // unit k left alone
    int last_max = kind == SegmentKind::Module ? k : n - 1;
    for (int j = k; j <= last_max; ++j) {
      plan.push_back({k, j});
      rec(j + 1);
      plan.pop_back();
    }
  };
  rec(0);
}

struct BruteForce {
  Ns best_cost = LLONG_MAX;   // least recompute within the budget
  Bytes min_peak = LLONG_MAX; // smallest peak of any plan
  Bytes least_peak_within = LLONG_MAX;
};

BruteForce bruteForce(const UnitChain& c, SegmentKind kind, Bytes budget, Ns cost_limit) {
  BruteForce b;
  forEachPlan(c.size(), kind, [&](const Segments& plan) {
    ChainPeak p = evaluateChain(c, plan);
    if (p.peak <= budget) b.best_cost = std::min(b.best_cost, p.recompute_ns);
    b.min_peak = std::min(b.min_peak, p.peak);
    if (p.recompute_ns <= cost_limit) b.least_peak_within = std::min(b.least_peak_within, p.peak);
  });
  return b;
}

void checkAgainstBruteForce(int n, SegmentKind kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  UnitChain c = testing::randomChain(n, rng);
  SolverOptions o;
  o.kind = kind;
  Solution minp = minimumPeak(c, o);
  ASSERT_TRUE(minp.feasible);
  for (double frac : {0.0, 0.1, 0.3, 0.5, 0.8, 1.0}) {
    Bytes budget = minp.peak + static_cast<Bytes>(frac * (c.baseline_peak - minp.peak));
    Ns cost_limit = static_cast<Ns>(frac * 300 * n / 4);
    BruteForce bf = bruteForce(c, kind, budget, cost_limit);
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed) +
                 " budget=" + std::to_string(budget));
    EXPECT_EQ(minp.peak, bf.min_peak);
    Solution s = solveOptimal(c, budget, o);
    ASSERT_TRUE(s.feasible);
    EXPECT_TRUE(s.exact);
    EXPECT_EQ(s.recompute_ns, bf.best_cost);
    EXPECT_LE(s.peak, budget);
    ChainPeak check = evaluateChain(c, s.segments);
    EXPECT_EQ(check.peak, s.peak);
    for (const Segment& seg : s.segments) {
      if (kind == SegmentKind::Module) {
        EXPECT_EQ(seg.first, seg.last);
      }
    }
    // Never worse than the budget-blind plans at the same budget.
    for (const Segments& fixed : {everyUnit(n), uniformPlan(n, kind)}) {
      ChainPeak p = evaluateChain(c, fixed);
      if (p.peak <= budget) {
        EXPECT_LE(s.recompute_ns, p.recompute_ns);
      }
    }
    Solution within = leastPeakWithin(c, cost_limit, o);
    ASSERT_TRUE(within.feasible);
    EXPECT_EQ(within.peak, bf.least_peak_within);
    EXPECT_LE(within.recompute_ns, cost_limit);
  }
  EXPECT_FALSE(solveOptimal(c, minp.peak - 1, o).feasible);
  EXPECT_FALSE(anyFeasible(c, minp.peak - 1, o).feasible);
}

TEST(OptimalSolver, ModuleSegmentsEqualBruteForceUpTo16Units) {
  for (int n : {1, 2, 3, 5, 8, 12, 16})
    for (uint64_t seed = 1; seed <= (n <= 8 ? 20u : 4u); ++seed)
      checkAgainstBruteForce(n, SegmentKind::Module, seed * 7919 + n);
}

TEST(OptimalSolver, RegionSegmentsEqualBruteForceUpTo12Units) {
  for (int n : {1, 2, 3, 5, 8, 10, 12})
    for (uint64_t seed = 1; seed <= (n <= 8 ? 20u : 3u); ++seed)
      checkAgainstBruteForce(n, SegmentKind::Region, seed * 104729 + n);
}

TEST(OptimalSolver, InfeasibleBelowWhatNoPlanChanges) {
  std::mt19937_64 rng(42);
  UnitChain c = testing::randomChain(6, rng);
  SolverOptions o;
  EXPECT_FALSE(solveOptimal(c, c.outside - 1, o).feasible);
  Solution loose = solveOptimal(c, c.baseline_peak, o);
  ASSERT_TRUE(loose.feasible);
  EXPECT_TRUE(loose.segments.empty());  // the recorded run already fits: recompute nothing
  EXPECT_EQ(loose.recompute_ns, 0);
}

}  // namespace
}  // namespace gcprof::advisor

namespace gcprof::advisor {
namespace {

// Thinned searches (long chains) stay valid and close to the exact optimum.
TEST(OptimalSolver, ThinnedSearchStaysCloseToExact) {
  double worst = 1.0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    UnitChain c = testing::randomChain(40, rng);
    for (SegmentKind kind : {SegmentKind::Module, SegmentKind::Region}) {
      SolverOptions exact_o;
      exact_o.kind = kind;
      SolverOptions thin_o = exact_o;
      thin_o.max_front = 16;
      Solution minp = minimumPeak(c, exact_o);
      Bytes budget = minp.peak + (c.baseline_peak - minp.peak) / 3;
      Solution exact = solveOptimal(c, budget, exact_o);
      Solution thin = solveOptimal(c, budget, thin_o);
      ASSERT_TRUE(exact.feasible);
      ASSERT_TRUE(thin.feasible);
      EXPECT_TRUE(exact.exact);
      EXPECT_LE(thin.peak, budget);
      EXPECT_GE(thin.recompute_ns, exact.recompute_ns);
      if (exact.recompute_ns > 0)
        worst = std::max(worst, static_cast<double>(thin.recompute_ns) / exact.recompute_ns);
    }
  }
  EXPECT_LE(worst, 1.10);
  std::printf("thinned to 16 states per position: worst recompute %.3f x exact\n", worst);
}

}  // namespace
}  // namespace gcprof::advisor
