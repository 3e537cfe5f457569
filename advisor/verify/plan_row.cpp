#include "verify/plan_row.h"

#include "plan/plan_store.h"

namespace gcprof::advisor {

int64_t planRow(TraceStore& store, const PlanFile& plan, Ns now) {
  nlohmann::json stored = plan.json;
  stored.erase("plan_id");
  if (plan.json.contains("plan_id") && plan.json["plan_id"].is_number_integer()) {
    int64_t id = plan.json["plan_id"].get<int64_t>();
    for (const PlanRecord& p : store.plans())
      if (p.id == id && nlohmann::json::parse(p.json, nullptr, false) == stored) return id;
  }
  return storePlan(store, stored, now);
}

}  // namespace gcprof::advisor
