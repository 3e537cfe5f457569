#include "plan_view.h"

#include "plan/plan_file.h"

namespace gcprof::view {

PlanView PlanView::fromRecord(const PlanRecord& record) {
  PlanView p;
  p.id = record.id;
  p.run = record.run;
  p.strategy = record.strategy;
  p.budget = record.budget;
  p.json = record.json;
  try {
    p.file = std::make_shared<const advisor::PlanFile>(
        advisor::parsePlanText(record.json, "plan " + std::to_string(record.id), advisor::PlanUse::Show));
  } catch (const std::exception& e) {
    p.error = std::string("unreadable plan: ") + e.what();
    return p;
  }
  const advisor::PlanFile& f = *p.file;
  if (f.json.contains("budget_bytes")) p.budget = f.budget_bytes;
  if (!f.strategy.empty()) p.strategy = f.strategy;
  p.units = f.units;
  p.checkpoint = f.checkpoint;
  p.blocks = f.blocks;
  p.save.assign(f.checkpoint.size(), {});
  p.kept = f.kept;
  for (size_t i = 0; i < f.checkpoint.size(); ++i) {
    p.checkpointed_.insert(f.checkpoint[i].begin(), f.checkpoint[i].end());
    p.checkpointed_.insert(f.segment_units[i].begin(), f.segment_units[i].end());
    if (f.policy[i] == "selective") p.save[i] = f.save[i];
    if (f.module[i].empty()) continue;
    p.modules.push_back(f.module[i]);
    for (const std::string& n : f.segment_units[i]) p.wrapped_by_[n] = f.module[i];
  }
  if (f.json.contains("predicted")) {
    const nlohmann::json& pr = f.json["predicted"];
    p.predicted_peak = pr.contains("peak_bytes") ? f.predicted_peak : -1;
    p.predicted_recompute = pr.contains("recompute_ns") ? f.predicted_recompute_ns : -1;
    p.predicted_step = pr.contains("step_ns") ? f.predicted_step_ns : -1;
  }
  return p;
}

std::string PlanView::checkpointedAs(const std::string& unit) const {
  auto it = wrapped_by_.find(unit);
  if (it != wrapped_by_.end()) return it->second;
  return checkpointed(unit) ? unit : std::string();
}

const std::vector<std::string>* PlanView::saveList(const std::string& unit) const {
  for (size_t i = 0; i < checkpoint.size() && i < save.size(); ++i)
    if (!save[i].empty() && checkpoint[i].size() == 1 && checkpoint[i][0] == unit) return &save[i];
  return nullptr;
}

std::string PlanView::label() const {
  std::string s = "plan " + std::to_string(id) + ": " + strategy;
  if (budget > 0) s += ", budget " + formatBytes(budget);
  if (!error.empty()) s += " (" + error + ")";
  return s;
}

}  // namespace gcprof::view
