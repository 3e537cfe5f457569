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
    if (j.value("format", std::string()) != "gcprof.plan/1") {
      p.error = "not a gcprof.plan/1 document";
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

std::string PlanView::label() const {
  std::string s = "plan " + std::to_string(id) + ": " + strategy;
  if (budget > 0) s += ", budget " + formatBytes(budget);
  if (!error.empty()) s += " (" + error + ")";
  return s;
}

}  // namespace gcprof::view
