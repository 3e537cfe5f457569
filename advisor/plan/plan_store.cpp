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

}  // namespace gcprof::advisor
