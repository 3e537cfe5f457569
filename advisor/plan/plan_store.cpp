#include "plan/plan_store.h"

namespace gcprof::advisor {

int64_t storePlan(TraceStore& store, const nlohmann::json& doc, Ns created) {
  PlanRecord p;
  p.run = doc.value("trace_run", int64_t{0});
  p.created = created;
  p.strategy = doc.value("strategy", std::string());
  p.budget = doc.value("budget_bytes", Bytes{0});
  p.json = doc.dump();
  return store.savePlan(p);
}

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
