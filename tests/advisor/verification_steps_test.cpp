// verify's step time and its "run recorded" gate. Without step markers,
// advise infers the steps (the forward/backward passes of the units) and so
// must verify: the whole run as one step made a plan that recomputes look
// 66-75% faster than the run it was made on, and the `none` plan fail.
#include <gtest/gtest.h>

#include <map>

#include "chain_traces.h"
#include "plan/advice.h"
#include "plan/plan_file.h"
#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

using testing::ChainSpec;
using testing::chainTrace;

// Three training iterations over four units, recorded without step markers
// (a LibTorch or C API job that marks ranges only), inside a run four times
// as long as the iterations (set-up and tear-down around them).
Trace unmarkedRun(int64_t id) {
  ChainSpec spec;
  spec.units = 4;
  spec.steps = 3;
  Trace t = chainTrace(spec);
  t.steps.clear();
  for (Range& r : t.ranges) r.step = -1;
  for (Allocation& a : t.allocations) a.step = -1;
  t.run.id = id;
  t.run.backend = "host";
  t.run.started = 0;
  t.run.ended = 4 * 3 * testing::stepSpan(spec);
  return t;
}

PlanFile nonePlan(const Trace& t) {
  AdviceRequest r;
  r.strategy = Strategy::None;
  return parsePlan(planJson(advise(t, r)), "none.json");
}

std::map<std::string, Gate> gatesOf(const Verification& v) {
  std::map<std::string, Gate> out;
  for (const Gate& g : v.gates) out[g.name] = g;
  return out;
}

TEST(VerificationSteps, WithoutStepMarkersTheStepsAreThoseAdviseInfers) {
  Trace base = unmarkedRun(1), again = unmarkedRun(2);
  PlanFile plan = nonePlan(base);
  ASSERT_GT(plan.baseline_step_ns, 0);
  Verification v = verify(base, again, plan, 1, 0, 0.25);
  EXPECT_TRUE(v.inferred_steps);
  // The recorded run with nothing checkpointed: the step time advise priced.
  EXPECT_EQ(v.baseline_step_ns, plan.baseline_step_ns);
  EXPECT_EQ(v.measured_step_ns, plan.predicted_step_ns);
  EXPECT_LT(v.baseline_step_ns, base.run.ended / 3);  // not the whole run
  EXPECT_NEAR(predictedSlowdown(v), 0.0, 1e-9);
  auto g = gatesOf(v);
  EXPECT_TRUE(g["step time prediction"].passed) << g["step time prediction"].detail;
  EXPECT_TRUE(g["run recorded"].passed) << g["run recorded"].detail;
  EXPECT_NE(g["run recorded"].detail.find("inferred steps"), std::string::npos) << g["run recorded"].detail;
}

TEST(VerificationSteps, StepMarkersStillWin) {
  ChainSpec spec;
  spec.steps = 3;
  Trace base = chainTrace(spec);
  StepTime st = stepTime(base, testing::unitNames(spec.units));
  EXPECT_FALSE(st.inferred);
  EXPECT_EQ(st.steps, 3u);
  EXPECT_EQ(st.ns, medianStepNs(base));
}

TEST(VerificationSteps, ARunThatRecordedNothingFailsEvenWithinTheBudget) {
  Trace base = unmarkedRun(1);
  PlanFile plan = nonePlan(base);
  Trace nothing;  // `verify -- true`, or a job that died before allocating
  nothing.run.id = 2;
  nothing.run.backend = "host";
  Verification v = verify(base, nothing, plan, 1, 0);
  auto g = gatesOf(v);
  EXPECT_EQ(v.verdict, "FAIL");
  EXPECT_FALSE(g["run recorded"].passed);
  EXPECT_NE(g["run recorded"].detail.find("allocated nothing"), std::string::npos) << g["run recorded"].detail;
  EXPECT_FALSE(g["peak within budget"].passed) << "0 B is no measured peak";
}

TEST(VerificationSteps, ARunWithAllocationsButNoStepsFailsWhenTheBaselineHadSteps) {
  ChainSpec spec;
  spec.steps = 3;
  Trace base = chainTrace(spec);
  PlanFile plan = nonePlan(base);
  Trace started;  // allocated its parameters, then died before training
  started.run.id = 2;
  testing::appendAllocation(started, 10, -1, 1000);
  Verification v = verify(base, started, plan, 1, 0);
  auto g = gatesOf(v);
  EXPECT_FALSE(g["run recorded"].passed);
  EXPECT_NE(g["run recorded"].detail.find("the verification none"), std::string::npos) << g["run recorded"].detail;
}

}  // namespace
}  // namespace gcprof::advisor
