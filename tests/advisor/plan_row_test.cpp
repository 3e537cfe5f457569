// A plan file's plan_id names a row of the trace it was advised on; verify
// must not link a verification to another trace's plan that happens to carry
// the same id.
#include "plan/plan_store.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "chain_traces.h"
#include "trace_file.h"

namespace gcprof::advisor {
namespace {

PlanFile planWith(int64_t plan_id, const std::string& unit) {
  nlohmann::json doc = {{"format", kPlanFormat}, {"trace_run", 1}, {"strategy", "every"},
                        {"budget_bytes", 1000}, {"plan_id", plan_id},
                        {"units", {unit}}, {"checkpoint", {{unit}}}};
  return parsePlan(doc, "test plan");
}

TEST(PlanRow, AnIdFromAnotherTraceGetsARowOfItsOwn) {
  std::string db = ::testing::TempDir() + "gcprof-plan-row.db";
  std::remove(db.c_str());
  testing::writeTrace(db, testing::chainTrace({}));
  TraceStore store(db, TraceStore::Mode::ReadWrite);
  PlanFile here = planWith(0, "layers.0");
  nlohmann::json stored = here.json;
  stored.erase("plan_id");
  int64_t id = store.savePlan({0, 1, 1, "every", 1000, stored.dump()});
  ASSERT_EQ(id, 1);

  // The same plan with its id: the existing row.
  EXPECT_EQ(planRow(store, planWith(id, "layers.0"), 2), id);
  // Another trace's plan that also got id 1: a new row, holding that plan.
  PlanFile foreign = planWith(id, "layers.2");
  int64_t row = planRow(store, foreign, 3);
  EXPECT_NE(row, id);
  std::vector<PlanRecord> plans = store.plans();
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(plans.back().json)["units"][0], "layers.2");
  EXPECT_FALSE(nlohmann::json::parse(plans.back().json).contains("plan_id"));
  // No id at all (a hand-written plan): a new row too.
  PlanFile bare = planWith(0, "layers.1");
  bare.json.erase("plan_id");
  EXPECT_EQ(planRow(store, bare, 4), row + 1);
  std::remove(db.c_str());
}

}  // namespace
}  // namespace gcprof::advisor
