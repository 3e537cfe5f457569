// gcprof.plan/2 (and /1) parsing and validation for LibTorch programs (docs/plan.md).
#include "gcprof/torch/plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gcprof::torch {
namespace {

// v2 adds per-segment fields for the python runtime (`module`, `policy`);
// region plans for this helper read the same in both versions.
constexpr const char* kFormat = "gcprof.plan/2";
constexpr const char* kFormatV1 = "gcprof.plan/1";
constexpr const char* kHowToFix = "write it with `gcprof advise TRACE --budget ... -o plan.json`";

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw PlanError(source + ": " + what);
}

std::vector<std::string> string_list(const nlohmann::json& j, const std::string& source,
                                     const std::string& field) {
  if (!j.is_array()) fail(source, "\"" + field + "\" must be a list of unit names; " + kHowToFix);
  std::vector<std::string> out;
  for (const auto& item : j) {
    if (!item.is_string()) fail(source, "\"" + field + "\" holds " + item.dump() + ", not a unit name");
    out.push_back(item.get<std::string>());
  }
  return out;
}

void check_format(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) fail(source, "not a gcprof plan (a JSON object was expected); " + std::string(kHowToFix));
  if (!doc.contains("format") || !doc["format"].is_string()) {
    fail(source, "no \"format\" field; not a gcprof plan; " + std::string(kHowToFix));
  }
  std::string format = doc["format"].get<std::string>();
  const std::string family = "gcprof.plan/";
  if (format == kFormat || format == kFormatV1) {
    // Selective segments (operator save-lists) need the python runtime's
    // selective checkpointing; the C++ helper recomputes whole regions only.
    if (doc.contains("segments") && doc["segments"].is_array())
      for (const auto& seg : doc["segments"])
        if (seg.is_object() && seg.value("policy", std::string("whole")) == "selective")
          fail(source, "the plan has selective segments (\"policy\": \"selective\"), which only the "
                       "python runtime applies; advise with --whole-only for a LibTorch program");
    return;
  }
  if (format.rfind(family, 0) == 0) {
    fail(source, "plan format " + format + " is not " + kFormat + " or " + kFormatV1 +
                     ", the ones this gcprof reads; upgrade gcprof or advise again with this one");
  }
  fail(source, "format is \"" + format + "\", expected \"" + kFormat + "\"; " + kHowToFix);
}

std::string join(const std::vector<std::string>& names, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? sep : "") + names[i];
  return out;
}

// A readable summary of what the model offers, for error messages.
std::string describe_units(const std::vector<std::string>& units) {
  if (units.empty()) return "none";
  if (units.size() <= 6) return join(units, ", ");
  return units.front() + ", " + units[1] + ", ... " + units.back() + " (" + std::to_string(units.size()) + " units)";
}

}  // namespace

CheckpointPlan CheckpointPlan::parse(const std::string& json_text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(source, std::string("not valid JSON (") + e.what() + "); " + kHowToFix);
  }
  check_format(doc, source);

  CheckpointPlan plan;
  plan.source_ = source;
  if (doc.contains("units")) plan.units_ = string_list(doc["units"], source, "units");
  if (!doc.contains("checkpoint")) fail(source, "no \"checkpoint\" field (the list of segments); " + std::string(kHowToFix));
  const nlohmann::json& segments = doc["checkpoint"];
  if (!segments.is_array()) fail(source, "\"checkpoint\" must be a list of segments, each a list of unit names");

  std::map<std::string, size_t> position;  // in the plan's own unit chain
  for (size_t i = 0; i < plan.units_.size(); ++i) position.emplace(plan.units_[i], i);
  std::set<std::string> taken;
  for (size_t s = 0; s < segments.size(); ++s) {
    std::string field = "checkpoint[" + std::to_string(s) + "]";
    std::vector<std::string> segment = string_list(segments[s], source, field);
    if (segment.empty()) fail(source, field + " is an empty segment; remove it");
    for (size_t k = 0; k < segment.size(); ++k) {
      const std::string& name = segment[k];
      if (!taken.insert(name).second) fail(source, "unit \"" + name + "\" is checkpointed twice (" + field + ")");
      if (plan.units_.empty()) continue;
      auto it = position.find(name);
      if (it == position.end()) {
        fail(source, field + " names \"" + name + "\", which is not in the plan's \"units\"; " + kHowToFix);
      }
      if (k > 0 && it->second != position[segment[k - 1]] + 1) {
        fail(source, field + " is not a run of consecutive units (" + join(segment, ", ") + ")");
      }
    }
    plan.segments_.push_back(std::move(segment));
  }
  return plan;
}

CheckpointPlan CheckpointPlan::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot open the plan file; check the path (GCPROF_PLAN or --plan)");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

bool CheckpointPlan::is_checkpointed(const std::string& unit) const {
  for (const auto& segment : segments_) {
    if (std::find(segment.begin(), segment.end(), unit) != segment.end()) return true;
  }
  return false;
}

std::vector<SegmentRange> CheckpointPlan::resolve(const std::vector<std::string>& model_units) const {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < model_units.size(); ++i) index.emplace(model_units[i], i);

  // Every unknown name at once, so that one run shows everything to fix.
  std::vector<std::string> problems;
  for (const auto& segment : segments_) {
    for (const std::string& name : segment) {
      if (index.count(name)) continue;
      std::vector<std::string> near = near_matches(name, model_units);
      problems.push_back("  \"" + name + "\": " +
                         (near.empty() ? std::string("no similar unit") : "did you mean " + join(near, ", ") + "?"));
    }
  }
  if (!problems.empty()) {
    fail(source_, std::to_string(problems.size()) + " checkpoint unit" + (problems.size() == 1 ? "" : "s") +
                      " not found in this model (its checkpointable units: " + describe_units(model_units) +
                      "):\n" + join(problems, "\n") +
                      "\nadvise on a trace of this model, or fix the names in the plan");
  }

  std::vector<SegmentRange> ranges;
  for (const auto& segment : segments_) {
    SegmentRange r{index[segment.front()], index[segment.back()]};
    for (size_t k = 1; k < segment.size(); ++k) {
      if (index[segment[k]] != index[segment[k - 1]] + 1) {
        fail(source_, "segment [" + join(segment, ", ") +
                          "] is not a run of consecutive units in this model's forward order");
      }
    }
    ranges.push_back(r);
  }
  std::sort(ranges.begin(), ranges.end(), [](const SegmentRange& a, const SegmentRange& b) { return a.first < b.first; });
  return ranges;
}

std::optional<CheckpointPlan> plan_from_env() {
  const char* path = std::getenv("GCPROF_PLAN");
  if (path == nullptr || *path == '\0') return std::nullopt;
  return CheckpointPlan::load(path);
}

}  // namespace gcprof::torch
