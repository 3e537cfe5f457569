#include "plan_view.h"
#include "byte_text.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace gcprof::view {

PlanView PlanView::fromRecord(const PlanRecord& record) {
  PlanView p;
  p.id = record.id;
  p.run = record.run;
  p.strategy = record.strategy;
  p.budget = record.budget;
  p.json = record.json;
  try {
    auto j = nlohmann::json::parse(record.json);
    std::string format = j.value("format", std::string());
    if (format != "gcprof.plan/2" && format != "gcprof.plan/1") {
      p.error = "not a gcprof.plan/2 (or /1) document";
      return p;
    }
    p.budget = j.value("budget_bytes", record.budget);
    p.strategy = j.value("strategy", record.strategy);
    for (const auto& u : j.value("units", nlohmann::json::array())) p.units.push_back(u.get<std::string>());
    for (const auto& seg : j.value("checkpoint", nlohmann::json::array())) {
      std::vector<std::string> names;
      for (const auto& u : seg) {
        names.push_back(u.get<std::string>());
        p.checkpointed_.insert(names.back());
      }
      p.checkpoint.push_back(std::move(names));
    }
    // v2: each segment's chain units (for a module-tree plan, the children
    // of a checkpointed parent) and the module wrapped; v1 has neither.
    for (const auto& seg : j.value("segments", nlohmann::json::array())) {
      if (!seg.is_object()) continue;
      std::vector<std::string> names;
      for (const auto& u : seg.value("units", nlohmann::json::array())) {
        names.push_back(u.get<std::string>());
        p.checkpointed_.insert(names.back());
      }
      std::string module = seg.value("module", std::string());
      if (!module.empty()) {
        p.modules.push_back(module);
        for (const std::string& n : names) p.wrapped_by_[n] = module;
      }
      p.segment_units.push_back(std::move(names));
    }
    for (const auto& b : j.value("blocks", nlohmann::json::array())) p.blocks.push_back(b.get<std::string>());
    p.save.assign(p.checkpoint.size(), {});
    p.kept.assign(p.checkpoint.size(), 0);
    const nlohmann::json segments = j.value("segments", nlohmann::json::array());
    for (size_t i = 0; i < segments.size() && i < p.save.size(); ++i)
      if (segments[i].is_object() && segments[i].value("policy", std::string("whole")) == "selective") {
        for (const auto& k : segments[i].value("save", nlohmann::json::array())) p.save[i].push_back(k.get<std::string>());
        p.kept[i] = segments[i].value("kept_bytes", Bytes{0});
      }
    if (j.contains("predicted") && j["predicted"].is_object()) {
      const auto& pr = j["predicted"];
      p.predicted_peak = pr.value("peak_bytes", Bytes{-1});
      p.predicted_recompute = pr.value("recompute_ns", Ns{-1});
      p.predicted_step = pr.value("step_ns", Ns{-1});
    }
  } catch (const std::exception& e) {
    p.error = std::string("unreadable plan: ") + e.what();
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
