// verify's checks of a plan against the recorded run, before anything runs:
// the modules it checkpoints exist, and none was recorded changing its input
// in place (a hand-edited plan checkpointing one ran and crashed in backward).
#include "verify/plan_modules.h"

#include <gtest/gtest.h>

#include "chain_traces.h"
#include "trace_store.h"

namespace gcprof::advisor {
namespace {

std::string refusal(const std::vector<std::vector<std::string>>& checkpoint, const Trace& t) {
  PlanFile plan;
  plan.checkpoint = checkpoint;
  try {
    checkPlanModulesExist(plan, t, "plan.json");
    return "";
  } catch (const StoreError& e) {
    return e.what();
  }
}

TEST(PlanModules, AModuleRecordedInPlaceIsRefusedByName) {
  Trace t = testing::chainTrace(testing::ChainSpec{});
  t.scalars.push_back({0, "inplace layers.1", 1.0});
  EXPECT_EQ(refusal({{"layers.0"}, {"layers.2"}}, t), "");
  std::string why = refusal({{"layers.0"}, {"layers.1"}}, t);
  EXPECT_EQ(why.rfind("plan.json: checkpoints 'layers.1', which run 1 recorded as changing its input in place", 0),
            0u)
      << why;
  EXPECT_NE(why.find("remove it from the plan"), std::string::npos) << why;
}

TEST(PlanModules, AMissingModuleIsStillNamedWithItsNearestNames) {
  Trace t = testing::chainTrace(testing::ChainSpec{});
  std::string why = refusal({{"layers.9"}}, t);
  EXPECT_NE(why.find("unit 'layers.9' is not a module of run 1 (near: "), std::string::npos) << why;
}

}  // namespace
}  // namespace gcprof::advisor
