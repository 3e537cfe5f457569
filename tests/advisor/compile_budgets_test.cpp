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

CompileBudgetSweep sweepOf(std::vector<CompileBudgetRun> runs, Bytes budget) {
  CompileBudgetSweep s;
  s.budget = budget;
  s.recorded_run = 1;
  s.runs = std::move(runs);
  return s;
}

Verification eagerPlan(const char* verdict, Bytes peak, Ns step) {
  Verification v;
  v.verdict = verdict;
  v.run = 9;
  v.measured_peak = peak;
  v.measured_step_ns = step;
  return v;
}

TEST(CompileBudgets, TheEagerPlanIsNamedWhenItFitsAndIsFaster) {
  CompileBudgetSweep s = sweepOf({sound(0.3, 379, 120), sound(0.5, 306, 130)}, 350);
  EXPECT_EQ(fastestAnswer(s).value, 1);
  s.eager = eagerPlan("PASS", 340, 125);
  EXPECT_TRUE(fastestAnswer(s).eager_plan);
  s.eager = eagerPlan("PASS", 360, 100);  // faster, but over the budget
  EXPECT_EQ(fastestAnswer(s).value, 1);
  s.eager = eagerPlan("FAIL", 300, 100);
  EXPECT_EQ(fastestAnswer(s).value, 1);
  s.budget = 300;
  EXPECT_TRUE(fastestAnswer(s).none());
}

TEST(CompileBudgets, JsonHasEachValueTheEagerPlanAndTheFastest) {
  CompileBudgetSweep s = sweepOf({sound(0.3, 379, 120), sound(0.5, 306, 130)}, 350);
  s.runs[0].run = 2;
  s.runs[1].run = 3;
  s.runs[1].losses.detail = "4 steps compared";
  nlohmann::json j = toJson(s);
  EXPECT_EQ(j["budget_bytes"], 350);
  EXPECT_EQ(j["recorded"]["run"], 1);
  EXPECT_TRUE(j["recorded"]["compiled_with"].is_null());
  ASSERT_EQ(j["values"].size(), 2u);
  EXPECT_EQ(j["values"][0]["activation_memory_budget"], 0.3);
  EXPECT_EQ(j["values"][0]["run"], 2);
  EXPECT_EQ(j["values"][0]["fits"], false);
  EXPECT_EQ(j["values"][1]["fits"], true);
  EXPECT_EQ(j["values"][1]["applied"], true);
  EXPECT_EQ(j["values"][1]["counts"], true);
  EXPECT_EQ(j["values"][1]["peak_bytes"], 306);
  EXPECT_EQ(j["values"][1]["step_ns"], 130);
  EXPECT_EQ(j["values"][1]["exit_code"], 0);
  EXPECT_EQ(j["values"][1]["losses"]["passed"], true);
  EXPECT_EQ(j["values"][1]["losses"]["detail"], "4 steps compared");
  EXPECT_TRUE(j["eager_plan"].is_null());
  EXPECT_EQ(j["fastest"]["what"], "activation_memory_budget");
  EXPECT_EQ(j["fastest"]["activation_memory_budget"], 0.5);
  EXPECT_EQ(j["fastest"]["run"], 3);

  s.eager_plan = "eager.json";
  s.eager = eagerPlan("PASS", 340, 125);
  j = toJson(s);
  EXPECT_EQ(j["eager_plan"]["plan"], "eager.json");
  EXPECT_EQ(j["eager_plan"]["verdict"], "PASS");
  EXPECT_EQ(j["eager_plan"]["fits"], true);
  EXPECT_EQ(j["eager_plan"]["step_ns"], 125);
  EXPECT_EQ(j["fastest"]["what"], "eager_plan");
  EXPECT_EQ(j["fastest"]["run"], 9);

  s.budget = 100;
  EXPECT_TRUE(toJson(s)["fastest"].is_null());
}

}  // namespace
}  // namespace gcprof::advisor
