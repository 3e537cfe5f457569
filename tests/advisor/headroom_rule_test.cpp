// The default headroom is sized from the trace (plan/headroom.h): 1% of the
// budget where the python shim's checkpoint applies the plan, 3% where the
// C++ runtime's reentrant one does, plus the step-to-step jitter and the
// checkpoint arguments the match by size cannot tell apart.
#include "plan/advice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "byte_text.h"
#include "chain_traces.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;

Bytes share(double fraction, Bytes budget) {
  return static_cast<Bytes>(std::llround(fraction * static_cast<double>(budget)));
}

Bytes jitterOf(const Trace& t, const Advice& a) {
  return stepPeakJitter(t, primaryFilter(t), a.chain.steady_step);
}

ChainSpec steadyChain(const std::string& runtime) {
  ChainSpec spec;
  spec.units = 8;
  spec.steps = 3;
  spec.grad = 0;  // gradients re-allocated every step would make each step's peak higher
  spec.runtime = runtime;
  return spec;
}

TEST(HeadroomRule, PythonCheckpointsKeepOnePercentAndTheCppRuntimeThree) {
  for (double budget_share : {0.6, 0.8}) {
    Trace python = chainTrace(steadyChain("python"));
    AdviceRequest r;
    r.budget = Budget::share(budget_share);
    Advice a = advise(python, r);
    ASSERT_TRUE(a.feasible) << a.message;
    EXPECT_DOUBLE_EQ(a.headroom.fraction, 0.01);
    EXPECT_EQ(a.headroom.bytes, share(0.01, a.budget) + jitterOf(python, a));
    EXPECT_NE(a.headroom.rule.find("1% of the budget"), std::string::npos) << a.headroom.rule;
    EXPECT_LE(a.chosen.peak, a.budget - a.headroom.bytes);

    Trace native = chainTrace(steadyChain("native"));
    Advice n = advise(native, r);
    EXPECT_DOUBLE_EQ(n.headroom.fraction, 0.03);
    EXPECT_EQ(n.headroom.bytes, share(0.03, n.budget) + jitterOf(native, n));
    EXPECT_NE(n.headroom.rule.find("3% of the budget"), std::string::npos) << n.headroom.rule;
  }
}

// HF GPT-2's case (chain/checkpoint_arguments.h, untoldArguments): every block
// is passed an attention mask (300 bytes here) that the recorded run frees
// when the model's forward returns, and layers.0 saves a dropout mask of the
// same size, born later, which the match takes as the argument of layers.1
// and layers.2. The mask may be what their checkpoints hold: the headroom
// keeps its bytes free.
constexpr Bytes kMask = 300, kPositions = 8, kHidden = 100;

Trace maskTwinTrace() {
  ChainSpec spec;
  spec.runtime = "python";
  Trace t = chainTrace(spec);
  testing::addAllocation(t, 102, 400, kHidden);     // token embeddings, passed to no block
  testing::addAllocation(t, 104, 420, kMask);       // the attention mask
  testing::addAllocation(t, 106, 950, kPositions);  // position ids, alive through the backward
  testing::addAllocation(t, 108, 840, kHidden);     // layers.0's input, saved by it
  testing::addAllocation(t, 135, 840, kMask);       // layers.0's dropout mask, freed in its backward
  for (Range& r : t.ranges)
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward) r.input_bytes = kHidden + kMask + kPositions;
  return t;
}

TEST(HeadroomRule, CheckpointArgumentsNotToldApartBySizeAreKeptFree) {
  Trace t = maskTwinTrace();
  AdviceRequest r;
  r.budget = Budget::share(0.95);
  Advice a = advise(t, r);
  EXPECT_EQ(a.headroom.bytes, share(0.01, a.budget) + jitterOf(t, a) + kMask);
  EXPECT_NE(a.headroom.rule.find(formatBytes(kMask) + " checkpoint arguments not told apart by size"),
            std::string::npos)
      << a.headroom.rule;
}

// The least budget the hint names holds the untold bytes too: advise accepts
// it as printed.
TEST(HeadroomRule, TheHintedBudgetIsAcceptedWithTheUntoldArguments) {
  Trace t = maskTwinTrace();
  int hinted = 0;
  for (double budget_share : {0.5, 0.6, 0.7, 0.8}) {
    AdviceRequest r;
    r.budget = Budget::share(budget_share);
    Advice a = advise(t, r);
    if (a.feasible) continue;
    ASSERT_GT(a.least_budget, 0) << a.message;
    ++hinted;
    r.budget = Budget::size(a.least_budget);
    Advice raised = advise(t, r);
    EXPECT_TRUE(raised.feasible) << budget_share << ": " << raised.message;
    EXPECT_EQ(raised.headroom.bytes, share(0.01, raised.budget) + jitterOf(t, raised) + kMask);
  }
  EXPECT_GT(hinted, 0);
}

}  // namespace
}  // namespace gcprof::advisor
