#include "verify/compile_budgets.h"

#include <gtest/gtest.h>

#include "advice_error.h"

namespace gcprof::advisor {
namespace {

TEST(CompileBudgets, ParsesAGridOfValuesFromZeroToOne) {
  EXPECT_EQ(parseCompileBudgets("0,0.25,1"), (std::vector<double>{0, 0.25, 1}));
  for (const char* bad : {"", "0.2,", "1.5", "-0.1", "0.2,x", "0.3,0.3", "nan"})
    EXPECT_THROW(parseCompileBudgets(bad), AdviceError) << bad;
}

CompileBudgetRun sound(double value, Bytes peak, Ns step) {
  CompileBudgetRun r;
  r.value = r.compiled_with = value;
  r.peak = peak;
  r.step_ns = step;
  r.steps = 4;
  r.losses.passed = true;
  return r;
}

TEST(CompileBudgets, FastestIsAmongTheRunsThatFit) {
  // Not monotonic: 0.3 peaks above 0.5, as Inductor's partitioner does.
  std::vector<CompileBudgetRun> runs = {sound(0.0, 424, 150), sound(0.3, 379, 120), sound(0.5, 306, 130)};
  EXPECT_EQ(fastestWithin(runs, 380), 1);
  EXPECT_EQ(fastestWithin(runs, 350), 2);
  EXPECT_EQ(fastestWithin(runs, 300), -1);
}

TEST(CompileBudgets, ARunThatDidNotTrainTheSameOrWithTheValueDoesNotCount) {
  std::vector<CompileBudgetRun> runs = {sound(0.3, 100, 100), sound(0.5, 100, 200), sound(0.7, 100, 300)};
  runs[0].losses.passed = false;
  runs[1].compiled_with = 1.0;  // the job set its own value after the shim's
  EXPECT_EQ(fastestWithin(runs, 1000), 2);
  runs[2].exit_code = 1;
  EXPECT_EQ(fastestWithin(runs, 1000), -1);
}

TEST(CompileBudgets, StepTimeSkipsTheStepsThatCompile) {
  Trace t;
  t.steps = {{0, 0, 3000, 0}, {1, 3000, 4000, 0}, {2, 4000, 4010, 0}, {3, 4010, 4030, 0}, {4, 4030, 4060, 0}};
  EXPECT_EQ(compiledStepTime(t), 20);
  t.scalars = {{0, "activation_memory_budget", 0.5}};
  EXPECT_EQ(compiledWith(t), 0.5);
  EXPECT_EQ(compiledWith(Trace{}), -1);
}

}  // namespace
}  // namespace gcprof::advisor
