#include "plan/plan_simulation.h"

#include <gtest/gtest.h>

#include "chain_traces.h"
#include "advice_error.h"
#include "plan/advice.h"
#include "plan/plan_file.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;

// A python-like recording whose hooks cost 30 ns a module call: the forward
// times advise solves on are less that cost, and so must be a replayed plan's.
Trace hookedChain() {
  ChainSpec spec;
  spec.units = 8;
  spec.steps = 3;
  spec.runtime = "native";
  Trace t = chainTrace(spec);
  for (int64_t s = 0; s < spec.steps; ++s) t.scalars.push_back(Scalar{s, "hook_ns_per_call", 30});
  return t;
}

TEST(PlanSimulation, ReplaysAPlanFileAsAdvisePredictedIt) {
  Trace t = hookedChain();
  AdviceRequest r;
  r.budget = Budget::share(0.6);
  Advice a = advise(t, r);
  ASSERT_TRUE(a.feasible) << a.message;
  ASSERT_GT(a.recording_cost.hook_ns_per_call, 0);
  ASSERT_FALSE(a.chosen.segments.empty());
  PlanSimulation run = simulatePlan(t, parsePlan(planJson(a), "plan.json"));
  EXPECT_EQ(run.segments.size(), a.chosen.segments.size());
  EXPECT_EQ(run.sim.peak, a.chosen.peak);
  EXPECT_EQ(run.sim.recompute_ns, a.chosen.recompute_ns);
}

TEST(PlanSimulation, APlanOfOtherUnitsIsAnError) {
  Trace t = hookedChain();
  PlanFile plan = parsePlan({{"format", kPlanFormat}, {"budget_bytes", 1}, {"units", {"layers.0", "layers.1"}},
                             {"checkpoint", {{"layers.9"}}}},
                            "plan.json");
  try {
    simulatePlan(t, plan);
    FAIL() << "simulated a plan of units the trace lacks";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.9"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gcprof::advisor
