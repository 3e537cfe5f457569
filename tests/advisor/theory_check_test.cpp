// Chen et al. 2016 ("Training deep nets with sublinear memory cost"): on a
// homogeneous chain where each layer keeps only its output, segments of k
// layers keep n/k segment outputs through the forward and re-make k outputs
// at a time in backward, so the activation peak follows n/k + k and is
// smallest near k = sqrt(n).
#include <gtest/gtest.h>

#include <cmath>

#include "chain_run.h"
#include "solve/fixed_plans.h"
#include "solve/optimal_solver.h"

namespace gcprof::advisor {
namespace {

TEST(TheoryCheck, UniformSegmentsFollowNOverKPlusK) {
  testing::ChainSpec spec;
  spec.units = 36;
  spec.transient = 0;
  spec.saved = 0;
  spec.output = 1000;
  spec.grad = 0;
  spec.params = 5000;
  testing::ChainRun run(spec);

  int n = spec.units, best_k = 0;
  Bytes best = 0;
  for (int k = 1; k <= n; ++k) {
    Segments plan = uniformSegments(n, k, SegmentKind::Region);
    Bytes peak = run.simPeak(plan);
    EXPECT_EQ(evaluateChain(run.chain, plan).peak, peak) << "k=" << k;
    if (n % k == 0) {
      // n/k segment outputs (one of them freed before the backward starts)
      // plus k outputs re-made by the replay: exactly Chen's n/k + k shape.
      EXPECT_EQ(peak, spec.params + (n / k + k - 1) * spec.output) << "k=" << k;
    }
    if (best_k == 0 || peak < best) {
      best = peak;
      best_k = k;
    }
  }
  // sqrt(36) = 6 reaches the least peak (k = 5, with a short last segment, ties).
  EXPECT_EQ(best, spec.params + (6 + 6 - 1) * spec.output);
  double root = std::sqrt(static_cast<double>(n));
  EXPECT_GE(best_k, root / 2);
  EXPECT_LE(best_k, root * 2);

  // The optimum over all plans cannot be worse than the best uniform one,
  // and uniform's default length is round(sqrt(n)).
  SolverOptions o;
  EXPECT_LE(minimumPeak(run.chain, o).peak, best);
  EXPECT_EQ(uniformPlan(n, SegmentKind::Region).front().last, 5);
}

}  // namespace
}  // namespace gcprof::advisor
