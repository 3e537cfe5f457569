// A verification as the trace's verifications table stores it (JSON), and
// back. Rows are read by report and the GUI from traces that may have been
// edited or damaged: every field is checked for its type and range before it
// is used, and an error names the field (a double such as 1e308 converted to
// an integer is undefined behaviour, a negative byte count is nonsense).
#include <cmath>
#include <cstdint>
#include <string>

#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw VerificationRowError("field \"" + field + "\" " + what);
}

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// `j[key]`, which must be there when `required`; null when absent.
const json& member(const json& j, const std::string& path, const char* key, bool required) {
  static const json kNull;
  if (!j.is_object()) bad(path.empty() ? std::string("(row)") : path, "is not an object");
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) bad(path.empty() ? key : path + "." + key, "is missing");
    return kNull;
  }
  return *it;
}

std::string fieldName(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

// A whole number that fits int64 (and >= 0 for sizes and durations).
int64_t whole(const json& j, const std::string& path, const char* key, bool required, bool non_negative,
              int64_t fallback = 0) {
  const json& v = member(j, path, key, required);
  if (v.is_null()) return fallback;
  std::string name = fieldName(path, key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    bad(name, "is " + shown(v) + ", beyond any size or time gcprof stores");
  if (!v.is_number_integer())
    bad(name, "is " + shown(v) + ", not a whole number" + (v.is_number_float() ? " in range" : ""));
  int64_t n = v.get<int64_t>();
  if (non_negative && n < 0) bad(name, "is " + std::to_string(n) + ", negative");
  return n;
}

double real(const json& j, const std::string& path, const char* key, bool required, double fallback = 0) {
  const json& v = member(j, path, key, required);
  if (v.is_null()) return fallback;
  if (!v.is_number()) bad(fieldName(path, key), "is " + shown(v) + ", not a number");
  return v.get<double>();
}

std::string text(const json& j, const std::string& path, const char* key, bool required) {
  const json& v = member(j, path, key, required);
  if (v.is_null()) return "";
  if (!v.is_string()) bad(fieldName(path, key), "is " + shown(v) + ", not a string");
  return v.get<std::string>();
}

const json& list(const json& j, const char* key, bool required) {
  static const json kEmpty = json::array();
  const json& v = member(j, "", key, required);
  if (v.is_null()) return kEmpty;
  if (!v.is_array()) bad(key, "is " + shown(v) + ", not a list");
  return v;
}

std::vector<std::vector<std::string>> checkpoint(const json& j) {
  std::vector<std::vector<std::string>> out;
  const json& segments = list(j, "checkpoint", true);
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string at = "checkpoint[" + std::to_string(i) + "]";
    if (!segments[i].is_array()) bad(at, "is " + shown(segments[i]) + ", not a list of module names");
    out.emplace_back();
    for (const json& name : segments[i]) {
      if (!name.is_string()) bad(at, "holds " + shown(name) + ", not a module name");
      out.back().push_back(name.get<std::string>());
    }
  }
  return out;
}

}  // namespace

nlohmann::json toJson(const Verification& v) {
  nlohmann::json gates = nlohmann::json::array(), losses = nlohmann::json::array();
  for (const Gate& g : v.gates) gates.push_back({{"name", g.name}, {"passed", g.passed}, {"detail", g.detail}});
  for (const LossPair& l : v.losses)
    losses.push_back({{"step", l.step}, {"baseline", l.baseline}, {"measured", l.measured}});
  return {{"verdict", v.verdict},
          {"strategy", v.strategy},
          {"checkpoint", v.checkpoint},
          {"budget_bytes", v.budget},
          {"headroom_bytes", v.headroom},
          {"plan_id", v.plan_id},
          {"baseline", {{"run", v.baseline_run}, {"peak_bytes", v.baseline_peak}, {"step_ns", v.baseline_step_ns},
                        {"inferred_steps", v.inferred_steps}}},
          {"budget_memory", v.budget_memory},
          {"predicted",
           {{"peak_bytes", v.predicted_peak}, {"step_ns", v.predicted_step_ns},
            {"recompute_ns", v.predicted_recompute_ns}, {"reserved_peak_bytes", v.predicted_reserved_peak},
            {"baseline_step_ns", v.predicted_baseline_step_ns}}},
          {"measured",
           {{"run", v.run}, {"peak_bytes", v.measured_peak}, {"step_ns", v.measured_step_ns},
            {"exit_code", v.exit_code}, {"reserved_peak_bytes", v.measured_reserved_peak},
            {"reserved_source", v.measured_reserved_source}}},
          {"loss_tolerance", v.loss_tolerance},
          {"step_tolerance", v.step_tolerance >= 0 ? nlohmann::json(v.step_tolerance) : nlohmann::json()},
          {"losses", losses},
          {"gates", gates},
          {"hint", v.hint},
          {"other_size", v.other_size},
          {"attached", v.attached}};
}

Verification fromJson(const json& j) {
  Verification v;
  v.verdict = text(j, "", "verdict", true);
  if (v.verdict != "PASS" && v.verdict != "FAIL") bad("verdict", "is " + shown(j["verdict"]) + ", not PASS or FAIL");
  v.strategy = text(j, "", "strategy", false);
  v.budget_memory = text(j, "", "budget_memory", false);
  if (v.budget_memory.empty()) v.budget_memory = "allocated";
  if (v.budget_memory != "allocated" && v.budget_memory != "reserved")
    bad("budget_memory", "is " + shown(j["budget_memory"]) + ", not allocated or reserved");
  v.checkpoint = checkpoint(j);
  v.budget = whole(j, "", "budget_bytes", true, true);
  v.headroom = whole(j, "", "headroom_bytes", false, true);
  v.plan_id = whole(j, "", "plan_id", false, true);
  const json& base = member(j, "", "baseline", true);
  v.baseline_run = whole(base, "baseline", "run", false, true);
  v.baseline_peak = whole(base, "baseline", "peak_bytes", true, true);
  v.baseline_step_ns = whole(base, "baseline", "step_ns", true, true);
  v.inferred_steps = member(base, "baseline", "inferred_steps", false).is_boolean() &&
                     base["inferred_steps"].get<bool>();
  const json& pred = member(j, "", "predicted", true);
  v.predicted_peak = whole(pred, "predicted", "peak_bytes", true, true);
  v.predicted_step_ns = whole(pred, "predicted", "step_ns", false, true);
  v.predicted_recompute_ns = whole(pred, "predicted", "recompute_ns", false, true);
  v.predicted_reserved_peak = whole(pred, "predicted", "reserved_peak_bytes", false, false, -1);
  v.predicted_baseline_step_ns = whole(pred, "predicted", "baseline_step_ns", false, true);
  if (v.predicted_reserved_peak < -1) bad("predicted.reserved_peak_bytes", "is negative");
  const json& meas = member(j, "", "measured", true);
  v.run = whole(meas, "measured", "run", false, true);
  v.measured_peak = whole(meas, "measured", "peak_bytes", true, true);
  v.measured_step_ns = whole(meas, "measured", "step_ns", true, true);
  v.measured_reserved_peak = whole(meas, "measured", "reserved_peak_bytes", false, false, -1);
  if (v.measured_reserved_peak < -1) bad("measured.reserved_peak_bytes", "is negative");
  v.measured_reserved_source = text(meas, "measured", "reserved_source", false);
  int64_t exit_code = whole(meas, "measured", "exit_code", false, false);
  if (exit_code < INT32_MIN || exit_code > INT32_MAX) bad("measured.exit_code", "is " + std::to_string(exit_code) + ", not an exit code");
  v.exit_code = static_cast<int>(exit_code);
  v.loss_tolerance = real(j, "", "loss_tolerance", false);
  v.step_tolerance = real(j, "", "step_tolerance", false, -1);
  const json& losses = list(j, "losses", false);
  for (size_t i = 0; i < losses.size(); ++i) {
    std::string at = "losses[" + std::to_string(i) + "]";
    v.losses.push_back({whole(losses[i], at, "step", true, false), real(losses[i], at, "baseline", false, NAN),
                        real(losses[i], at, "measured", false, NAN)});  // JSON writes NaN as null
  }
  v.hint = text(j, "", "hint", false);
  v.other_size = text(j, "", "other_size", false);
  v.attached = text(j, "", "attached", false);
  const json& gates = list(j, "gates", true);
  for (size_t i = 0; i < gates.size(); ++i) {
    std::string at = "gates[" + std::to_string(i) + "]";
    const json& passed = member(gates[i], at, "passed", true);
    if (!passed.is_boolean()) bad(at + ".passed", "is " + shown(passed) + ", not true or false");
    v.gates.push_back({text(gates[i], at, "name", true), passed.get<bool>(), text(gates[i], at, "detail", false)});
  }
  return v;
}

}  // namespace gcprof::advisor
