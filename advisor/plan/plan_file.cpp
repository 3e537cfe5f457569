#include "plan/plan_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "advice_error.h"
#include "file_kind.h"

namespace gcprof::advisor {
namespace {

nlohmann::json outcomeJson(const PlanOutcome& o, const Advice& a) {
  double slowdown = a.baseline.step_ns > 0 ? static_cast<double>(o.step_ns) /
                                                 static_cast<double>(a.baseline.step_ns) - 1.0
                                           : 0.0;
  nlohmann::json j = {{"peak_bytes", o.peak},
                      {"recompute_ns", o.recompute_ns},
                      {"step_ns", o.step_ns},
                      {"slowdown", slowdown},
                      {"checkpointed_units", checkpointedModules(o, a)},
                      {"fits_budget", o.fits}};
  if (o.reserved_peak >= 0) j["reserved_peak_bytes"] = o.reserved_peak;
  return j;
}

// nlohmann turns a float into an integer with a plain cast, undefined out of
// range (the plan fuzzer found 8.7e113): integers must be written as integers.
template <typename T>
bool convertible(const nlohmann::json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned())
      return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  }
  return true;
}

template <typename T>
T field(const nlohmann::json& doc, const char* key, const std::string& where) {
  if (!doc.contains(key)) throw AdviceError(where + ": plan has no \"" + std::string(key) + "\"");
  try {
    if (convertible<T>(doc.at(key))) return doc.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
  }
  throw AdviceError(where + ": plan field \"" + std::string(key) + "\" has the wrong type");
}

// A field that may be missing (then `fallback`), but when present must have
// the right type: a wrong type is the user's edit, said in their words.
template <typename T>
T optionalField(const nlohmann::json& doc, const char* key, T fallback, const std::string& where,
                const char* prefix = "") {
  if (!doc.contains(key)) return fallback;
  try {
    if (convertible<T>(doc.at(key))) return doc.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
  }
  throw AdviceError(where + ": plan field \"" + prefix + key + "\" has the wrong type");
}

// Plans are a few levels deep; a hand-made file nested thousands of levels
// deep would overflow the stack in nlohmann's recursive copy.
constexpr int kMaxPlanDepth = 64;

// One `segments[]` entry: its units, policy and effect.
nlohmann::json segmentJson(const Advice& a, const Segment& s) {
  const UnitChain& c = a.chain;
  nlohmann::json names = nlohmann::json::array();
  for (int k = s.first; k <= s.last; ++k) names.push_back(c.names[k]);
  SegmentEffect e{c.droppedBytes(s.first, s.last), 0, c.recomputeNs(s.first, s.last)};
  nlohmann::json segment = {{"kind", toString(a.kind)}, {"units", names}};
  // The module torch.utils.checkpoint wraps: over the module tree, a
  // block spanning its sub-modules is the block itself.
  if (a.kind == SegmentKind::Module) segment["module"] = a.tree_plan ? a.tree.moduleOf(s) : c.names[s.first];
  segment["policy"] = s.selective() ? "selective" : "whole";
  if (s.selective()) {
    const SelectiveOption& opt = c.selective.at(s.first).at(s.option - 1);
    e = selectiveEffect(c, s.first, e, opt);
    segment["save"] = s.save;
    segment["save_rule"] = opt.label;
    segment["kept_bytes"] = opt.kept;
    if (opt.lingers()) segment["held_bytes"] = opt.lingering;  // outputs autograd does not keep
  }
  segment["recompute_ns"] = e.recompute_ns;
  segment["dropped_bytes"] = e.dropped;
  return segment;
}

// Per chain unit what the trace measured; a unit that is a recorded module
// adds the module's bytes in and out and its backward time.
nlohmann::json unitStatsJson(const Advice& a) {
  const UnitChain& c = a.chain;
  std::unordered_map<std::string, const ModuleStats*> by_name;
  for (const ModuleStats& m : a.modules) by_name[m.name] = &m;
  nlohmann::json unit_stats = nlohmann::json::array();
  for (int k = 0; k < c.size(); ++k) {
    nlohmann::json u = {{"name", c.names[k]}, {"forward_ns", c.forward_ns[k]}, {"saved_bytes", c.saved[k]}};
    auto m = by_name.find(c.names[k]);
    if (m != by_name.end()) {
      u["input_bytes"] = m->second->input_bytes;
      u["output_bytes"] = m->second->output_bytes;
      u["backward_ns"] = m->second->backward_ns;
    }
    unit_stats.push_back(u);
  }
  return unit_stats;
}

int selectiveUnits(const UnitChain& c) {
  int n = 0;
  for (const auto& options : c.selective) n += options.empty() ? 0 : 1;
  return n;
}

}  // namespace

nlohmann::json planJson(const Advice& a) {
  const UnitChain& c = a.chain;
  // `checkpoint` holds what the runtime wraps: the module, else the units.
  nlohmann::json checkpoint = nlohmann::json::array();
  nlohmann::json segments = nlohmann::json::array();
  for (const Segment& s : a.chosen.segments) {
    nlohmann::json segment = segmentJson(a, s);
    checkpoint.push_back(segment.contains("module") ? nlohmann::json::array({segment["module"]})
                                                    : segment["units"]);
    segments.push_back(std::move(segment));
  }
  nlohmann::json excluded = nlohmann::json::array();
  for (const ExcludedUnit& u : a.excluded) excluded.push_back({{"name", u.name}, {"reason", u.reason}});
  nlohmann::json baseline = {{"peak_bytes", a.baseline.peak}, {"step_ns", a.baseline.step_ns}};
  if (a.baseline.reserved_peak >= 0) baseline["reserved_peak_bytes"] = a.baseline.reserved_peak;
  nlohmann::json doc = {
      {"format", kPlanFormat},
      {"trace_run", a.run.id},
      {"runtime", a.run.runtime},
      {"strategy", toString(a.strategy)},
      {"segment_kind", toString(a.kind)},
      {"budget_bytes", a.budget},
      {"budget", a.has_budget ? a.budget_text : std::string()},
      {"headroom_bytes", a.headroom.bytes},
      {"headroom", {{"rule", a.headroom.rule}, {"jitter_bytes", a.headroom.margins.jitter},
                    {"untold_arguments_bytes", a.headroom.margins.untold_arguments},
                    {"fraction", a.headroom.fraction}, {"solved_within_bytes", a.limit()}}},
      {"memory", a.filter.describe()},
      // Which peak budget_bytes bounds: "reserved" (the caching allocator's
      // segments, predicted) or "allocated" (tensor bytes).
      {"budget_memory", toString(a.memory.measure)},
      {"budget_memory_rule", a.memory.why},
      {"units_rule", a.units.rule},
      {"units", c.names},
      {"excluded_units", excluded},
      {"checkpoint", checkpoint},
      {"segments", segments},
      {"predicted", outcomeJson(a.chosen, a)},
      {"baseline", baseline},
      {"compare", {{"every", outcomeJson(a.every, a)}, {"uniform", outcomeJson(a.uniform, a)}}},
      {"plan_level", a.tree_plan ? "tree" : "units"},
      {"feasible", a.feasible},
      {"exact", a.exact},
      {"steady_step", c.steady_step},
      {"recording_cost", {{"hook_ns_per_module_call", a.recording_cost.hook_ns_per_call},
                          {"op_ns_per_call", a.recording_cost.op_ns_per_call},
                          {"selective_ns_per_op", a.recording_cost.selective_ns_per_op}}},
      {"selective_units", selectiveUnits(c)},
      {"complete_steps", c.complete_steps},
      {"unit_stats", unitStatsJson(a)}};
  if (a.max_slowdown) doc["max_slowdown"] = *a.max_slowdown;
  if (a.tree_plan) {
    // The level the units were chosen at; `units` are then their sub-modules
    // (and the blocks that were not split), and a segment may be a block.
    doc["blocks"] = a.tree.blocks;
    if (a.blocks) doc["compare"]["blocks"] = outcomeJson(*a.blocks, a);
  }
  if (!a.feasible) {
    doc["message"] = a.message;
    if (a.min_reachable_peak >= 0) doc["min_reachable_peak_bytes"] = a.min_reachable_peak;
    if (a.least_budget > 0) doc["least_budget_bytes"] = a.least_budget;
  }
  return doc;
}

PlanFile parsePlan(const nlohmann::json& doc, const std::string& where, PlanUse use) {
  if (!doc.is_object()) throw AdviceError(where + ": not a gcprof plan (expected a JSON object)");
  PlanFile p;
  p.format = field<std::string>(doc, "format", where);
  if (!readablePlanFormat(p.format))
    throw AdviceError(where + ": plan format '" + p.format + "' is not " + kPlanFormat + " (or " +
                      kPlanFormatV1 + ")" +
                      "; write it with this gcprof's `advise -o`");
  p.trace_run = optionalField(doc, "trace_run", int64_t{0}, where);
  p.strategy = optionalField(doc, "strategy", std::string(), where);
  p.segment_kind = optionalField(doc, "segment_kind", std::string("region"), where);
  // A float here (1e30) would not convert to bytes without overflow.
  if (doc.contains("budget_bytes") &&
      !(doc["budget_bytes"].is_number_integer() && doc["budget_bytes"].get<double>() >= 0 &&
        doc["budget_bytes"].get<double>() < 9.2e18))
    throw AdviceError(where + ": plan field \"budget_bytes\" must be a whole number of bytes "
                      "from 0 to 2^63");
  p.budget_bytes = use == PlanUse::Show ? optionalField(doc, "budget_bytes", Bytes{0}, where)
                                        : field<Bytes>(doc, "budget_bytes", where);
  p.headroom_bytes = optionalField(doc, "headroom_bytes", Bytes{0}, where);
  p.units = optionalField(doc, "units", std::vector<std::string>{}, where);
  p.checkpoint = field<std::vector<std::vector<std::string>>>(doc, "checkpoint", where);
  p.blocks = optionalField(doc, "blocks", std::vector<std::string>{}, where);
  p.policy.assign(p.checkpoint.size(), "whole");
  p.save.assign(p.checkpoint.size(), {});
  p.segment_units = p.checkpoint;
  p.module.assign(p.checkpoint.size(), "");
  p.kept.assign(p.checkpoint.size(), 0);
  if (doc.contains("segments")) {
    const nlohmann::json& segs = doc["segments"];
    if (!segs.is_array() || segs.size() != p.checkpoint.size())
      throw AdviceError(where + ": plan field \"segments\" must be a list with one entry per "
                        "\"checkpoint\" segment");
    for (size_t i = 0; i < segs.size(); ++i) {
      if (!segs[i].is_object())
        throw AdviceError(where + ": plan field \"segments\" entry " + std::to_string(i) +
                          " has the wrong type (expected an object)");
      p.policy[i] = optionalField(segs[i], "policy", std::string("whole"), where, "segments[].");
      if (p.policy[i] != "whole" && p.policy[i] != "selective")
        throw AdviceError(where + ": segment " + std::to_string(i) + " has policy '" + p.policy[i] +
                          "'; expected whole or selective");
      p.save[i] = optionalField(segs[i], "save", std::vector<std::string>{}, where, "segments[].");
      std::vector<std::string> units = optionalField(segs[i], "units", std::vector<std::string>{}, where, "segments[].");
      if (!units.empty()) p.segment_units[i] = std::move(units);
      p.module[i] = optionalField(segs[i], "module", std::string(), where, "segments[].");
      if (p.policy[i] == "selective")
        p.kept[i] = optionalField(segs[i], "kept_bytes", Bytes{0}, where, "segments[].");
    }
  }
  for (const char* part : {"predicted", "baseline"})
    if (doc.contains(part) && !doc[part].is_object())
      throw AdviceError(where + ": plan field \"" + part + "\" has the wrong type (expected an object)");
  if (doc.contains("predicted")) {
    const nlohmann::json& pr = doc["predicted"];
    p.predicted_peak = optionalField(pr, "peak_bytes", Bytes{0}, where, "predicted.");
    p.predicted_recompute_ns = optionalField(pr, "recompute_ns", Ns{0}, where, "predicted.");
    p.predicted_step_ns = optionalField(pr, "step_ns", Ns{0}, where, "predicted.");
    p.predicted_reserved_peak = optionalField(pr, "reserved_peak_bytes", Bytes{-1}, where, "predicted.");
  }
  p.budget_memory = optionalField(doc, "budget_memory", std::string("allocated"), where);
  if (p.budget_memory != "allocated" && p.budget_memory != "reserved")
    throw AdviceError(where + ": plan field \"budget_memory\" is '" + p.budget_memory +
                      "'; expected reserved or allocated");
  if (doc.contains("baseline")) {
    const nlohmann::json& b = doc["baseline"];
    p.baseline_peak = optionalField(b, "peak_bytes", Bytes{0}, where, "baseline.");
    p.baseline_step_ns = optionalField(b, "step_ns", Ns{0}, where, "baseline.");
    p.baseline_reserved_peak = optionalField(b, "reserved_peak_bytes", Bytes{-1}, where, "baseline.");
  }
  p.json = doc;
  return p;
}

PlanFile readPlanFile(const std::string& path) {
  // The job reads the plan again through GCPROF_PLAN: it needs a file
  // (file_kind.h); a directory read as "not JSON".
  if (const char* what = irregularFileKind(path))
    throw AdviceError(path + ": is " + what +
                      ", not a plan file; write the plan to a file with `gcprof advise TRACE --budget ... -o FILE`");
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    struct stat st {};
    bool missing = ::stat(path.c_str(), &st) != 0 && errno == ENOENT;
    throw AdviceError(path + ": " +
                      (missing ? std::string("no such plan file; write one with `gcprof advise TRACE --budget ... -o ") +
                                     path + "`"
                               : "cannot read the plan file (" + std::string(std::strerror(err ? err : EACCES)) + ")"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parsePlanText(ss.str(), path);
}

PlanFile parsePlanText(const std::string& text, const std::string& where, PlanUse use) {
  bool too_deep = false;
  nlohmann::json doc = nlohmann::json::parse(
      text,
      [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxPlanDepth) too_deep = true;
        return !too_deep;  // drop what is too deep: it is never built, copied or freed
      },
      false);
  if (too_deep)
    throw AdviceError(where + ": nested deeper than " + std::to_string(kMaxPlanDepth) +
                      " levels; not a gcprof plan (write plans with `gcprof advise -o`)");
  if (doc.is_discarded())
    throw AdviceError(where + ": not valid JSON; write plans with `gcprof advise -o`");
  return parsePlan(doc, where, use);
}

}  // namespace gcprof::advisor
