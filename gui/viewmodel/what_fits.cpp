#include "what_fits.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "advice_error.h"
#include "report/what_if_table.h"
#include "scale/run_size.h"
#include "scale/what_if.h"

namespace gcprof::view {

namespace {

WhatFits parse(const nlohmann::json& w) {
  WhatFits out;
  out.size_name = w.value("size_name", std::string("size"));
  out.fit = w.value("fit", std::string());
  out.budget_text = w.value("budget", std::string());
  out.budget = w.value("budget_bytes", Bytes{0});
  out.headroom = w.value("headroom_bytes", Bytes{0});
  for (const auto& l : w.at("largest")) {
    WhatFits::Largest x;
    x.strategy = l.value("strategy", std::string());
    x.size = l.value("size", int64_t{0});
    x.capped = l.value("capped", false);
    if (l.contains("at")) {
      x.peak = l["at"].value("peak_bytes", Bytes{-1});
      x.step_ns = l["at"].value("step_ns", Ns{-1});
    }
    out.largest.push_back(x);
  }
  for (const auto& r : w.at("table")) {
    WhatFits::Row row;
    row.size = r.value("size", int64_t{0});
    row.recorded = r.value("recorded", false);
    std::vector<std::string> names;
    for (const auto& p : r.at("plans")) {
      names.push_back(p.value("strategy", std::string()));
      row.peaks.push_back(p.value("peak_bytes", Bytes{0}));
      row.fits.push_back(p.value("fits_budget", true));
    }
    if (out.strategies.empty()) out.strategies = names;
    if (names != out.strategies) throw std::runtime_error("the table's rows name different strategies");
    out.rows.push_back(std::move(row));
  }
  out.notes = advisor::whatIfNotes(w);
  return out;
}

}  // namespace

std::optional<WhatFits> whatFitsFromJson(const std::string& text, std::string* why) {
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    const nlohmann::json& w = doc.contains("what_if") ? doc["what_if"] : doc;
    if (!w.is_object() || !w.contains("largest") || !w.contains("table")) {
      *why = "no what-if in it (made by `gcprof advise --what-if NAME --size N`)";
      return std::nullopt;
    }
    return parse(w);
  } catch (const std::exception& e) {
    *why = std::string("its what-if cannot be read: ") + e.what();
    return std::nullopt;
  }
}


std::vector<std::pair<int64_t, int64_t>> sizedRunsOf(const std::vector<RunInfo>& runs, std::string* name) {
  std::vector<std::pair<int64_t, int64_t>> out;
  try {
    for (const advisor::RunSize& r : advisor::sizedRuns(runs, "", "")) {
      out.emplace_back(r.run, r.size);
      *name = r.name;
    }
  } catch (const std::exception&) {
    out.clear();  // fewer than two sized runs, or two names: nothing to offer
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

std::optional<WhatFits> computeWhatFits(const std::vector<std::pair<int64_t, int64_t>>& sized,
                                        const std::vector<const Trace*>& traces,
                                        const std::string& size_name, double budget_percent,
                                        std::string* why) {
  try {
    advisor::WhatIfRequest req;
    req.size_name = size_name;
    req.advice.budget = advisor::Budget::share(budget_percent / 100.0);
    std::vector<std::pair<int64_t, const Trace*>> runs;
    for (size_t i = 0; i < sized.size() && i < traces.size(); ++i) runs.emplace_back(sized[i].second, traces[i]);
    WhatFits w = parse(advisor::whatIfJson(advisor::whatIf(runs, req)));
    w.source = "computed for runs";
    for (size_t i = 0; i < sized.size(); ++i) w.source += (i ? ", " : " ") + std::to_string(sized[i].first);
    return w;
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
}


}  // namespace gcprof::view
