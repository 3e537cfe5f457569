#include "verify/size_argument.h"

#include <gtest/gtest.h>

#include <cmath>

#include "advice_error.h"

namespace gcprof::advisor {
namespace {

using Argv = std::vector<std::string>;

TEST(SizeArgument, ReplacesTheRecordedSize) {
  Argv argv = {"python3", "train.py", "--layers", "4", "--batch", "4", "--steps", "3"};
  EXPECT_EQ(withSize(argv, "--batch {size}", 4, 16),
            (Argv{"python3", "train.py", "--layers", "4", "--batch", "16", "--steps", "3"}));
  Argv joined = {"train", "--batch=4"};
  EXPECT_EQ(withSize(joined, "--batch={size}", 4, 9), (Argv{"train", "--batch=9"}));
}

TEST(SizeArgument, RefusesATemplateTheCommandDoesNotHave) {
  Argv argv = {"train", "--layers", "4", "--batch", "8"};
  EXPECT_THROW(withSize(argv, "--batch {size}", 4, 16), AdviceError);  // recorded at 8, not 4
  EXPECT_THROW(withSize(argv, "--batch 4", 4, 16), AdviceError);       // no {size}
}

TEST(SizeArgument, LossesAtAnotherSizeAreCheckedForBeingFinite) {
  Verification v;
  v.gates = {{"job completed", true, ""}, {"losses match", false, "differ"}};
  Trace m;
  m.scalars = {{0, "loss", 2.5}, {1, "loss", 2.4}};
  compareLossesAtSize(v, m, 16, 2);
  EXPECT_EQ(v.verdict, "PASS");
  EXPECT_EQ(v.gates[1].name, "losses finite");
  m.scalars[1].value = std::nan("");
  compareLossesAtSize(v, m, 16, 2);
  EXPECT_EQ(v.verdict, "FAIL");
}

TEST(SizeArgument, SlowdownsAtAnotherSizeAreOfOneSize) {
  // A plan for batch 24 made on runs up to batch 8: the re-run's step is of
  // batch 24 and the baseline's of batch 8 (175 vs 100 ms); that is no
  // +75% slowdown. The plan predicts 110 ms with checkpoints and 100 ms
  // without, both at batch 24.
  Verification v;
  v.verdict = "PASS";
  v.baseline_step_ns = 10'000'000;
  v.predicted_step_ns = 110'000'000;
  v.measured_step_ns = 105'000'000;
  v.step_tolerance = 0.25;
  v.gates = {{"job completed", true, ""}, stepTimeGate(v)};
  EXPECT_NE(v.gates[1].detail.find("+1000.0%"), std::string::npos) << v.gates[1].detail;
  PlanFile plan;
  plan.baseline_step_ns = 100'000'000;
  compareStepsAtSize(v, plan, "batch", 24, 8);
  EXPECT_NEAR(predictedSlowdown(v), 0.10, 1e-9);
  EXPECT_FALSE(slowdownMeasured(v));
  EXPECT_TRUE(std::isnan(measuredSlowdown(v)));
  EXPECT_EQ(v.gates[1].name, "step time prediction");
  EXPECT_TRUE(v.gates[1].passed);
  EXPECT_NE(v.gates[1].detail.find("at batch=24 (baseline batch=8): predicted 110.0 ms (+10.0%"), std::string::npos)
      << v.gates[1].detail;
  EXPECT_EQ(v.gates[1].detail.find("+1000"), std::string::npos) << v.gates[1].detail;
  // Stored and read back, the reports see the same.
  Verification back = fromJson(toJson(v));
  EXPECT_EQ(back.other_size, v.other_size);
  EXPECT_NEAR(predictedSlowdown(back), 0.10, 1e-9);
  // At the baseline's own size nothing changes.
  Verification same;
  same.baseline_step_ns = 100;
  same.predicted_step_ns = 120;
  same.measured_step_ns = 130;
  EXPECT_TRUE(slowdownMeasured(same));
  EXPECT_NEAR(measuredSlowdown(same), 0.30, 1e-9);
}

}  // namespace
}  // namespace gcprof::advisor
