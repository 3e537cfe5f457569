// verify on a baseline recorded by `gcprof attach`: its steps are paired
// with the re-run's, and the re-run's peak is taken on those steps above the
// level entering them (the heap from before attach is not in the baseline).
#include "verify/attached_run.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

void step(Trace& t, int64_t index, Ns start, Ns end) { t.steps.push_back({index, start, end, 0}); }

void block(Trace& t, Bytes bytes, Ns alloc, Ns free) { testing::appendAllocation(t, alloc, free, bytes); }

void loss(Trace& t, int64_t s, double v) { t.scalars.push_back({s, "loss", v}); }

TEST(AttachedRun, MarkedByItsFirstStepNumber) {
  Trace t;
  EXPECT_FALSE(attachedBaseline(t).attached);
  t.scalars.push_back({7, "attach_step", 7});
  AttachedBaseline a = attachedBaseline(t);
  EXPECT_TRUE(a.attached);
  EXPECT_TRUE(a.numbered_by_job);
  EXPECT_EQ(a.first_step, 7);
  t.scalars.push_back({7, "attach_step_unknown", 1});
  EXPECT_FALSE(attachedBaseline(t).numbered_by_job);
}

TEST(AttachedRun, StepsCountedFromAttachArePairedWhereTheLossesBegin) {
  Trace base, rerun;
  for (int64_t s = 0; s < 10; ++s) loss(rerun, s, 5.0 - s * 0.1);
  for (int64_t k = 0; k < 3; ++k) loss(base, k, 5.0 - (4 + k) * 0.1);
  EXPECT_EQ(offsetByLosses(base, rerun, 1e-6), 4);
  base.scalars[1].value += 1e-3;  // a plan that changed training pairs nowhere
  EXPECT_FALSE(offsetByLosses(base, rerun, 1e-6).has_value());
}

TEST(AttachedRun, PeakComparedOnTheAttachedStepsAboveTheLevelEnteringThem) {
  // The job: 58 B of heap from its start (not in the attached trace), 10 B
  // of parameters, and each step 20 B of activations; step 1 30 B.
  Trace rerun;
  block(rerun, 58, 1, -1);
  block(rerun, 10, 2, -1);
  for (int64_t s = 0; s < 4; ++s) {
    Ns t0 = 100 * (s + 1);
    step(rerun, s, t0, t0 + 50);
    block(rerun, s == 0 ? 40 : 20, t0 + 10, t0 + 20);  // step 0: warm-up, higher
  }
  // Attached before step 2: the parameters (reported at attach), steps 2,
  // 3, and 7 B that attach kept alive until a moment into step 2.
  Trace base;
  block(base, 10, 250, -1);
  block(base, 7, 250, 2005);
  for (int64_t s = 2; s < 4; ++s) {
    Ns t0 = 1000 * s;
    step(base, s, t0, t0 + 50);
    block(base, 20, t0 + 10, t0 + 20);
  }
  std::optional<ComparedPeak> c = comparedPeak(base, rerun);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rerun_peak, 108);     // 58 + 10 + step 0's 40
  EXPECT_EQ(c->rerun_entering, 68);  // heap and parameters entering step 3
  EXPECT_EQ(c->baseline_entering, 10);
  EXPECT_EQ(c->peak, 30);  // the attached run's own peak: parameters and a step

  Trace shifted = base;
  shiftSteps(shifted, 5);  // the re-run has no steps 7, 8
  EXPECT_FALSE(comparedPeak(shifted, rerun).has_value());
}

}  // namespace
}  // namespace gcprof::advisor
