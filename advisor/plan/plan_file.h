// The plan file, format gcprof.plan/2 (docs/plan.md; gcprof.plan/1 is still read): written by `advise`,
// stored in the trace's plans table, read by verify, the python shim and
// gcprof::torch.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/advice.h"

namespace gcprof::advisor {

// Written by this gcprof. v2 adds, per `segments[]` entry, the module the
// python runtime wraps (`module`, for plans over the module tree) and the
// checkpoint policy (selective plans); a v1 plan means whole-module checkpoints of
// its `checkpoint` names, which is what v2 says when those fields are absent.
inline constexpr const char* kPlanFormat = "gcprof.plan/2";
inline constexpr const char* kPlanFormatV1 = "gcprof.plan/1";
// Whether a reader of this gcprof understands `format`.
inline bool readablePlanFormat(const std::string& format) {
  return format == kPlanFormat || format == kPlanFormatV1;
}

nlohmann::json planJson(const Advice& advice);

// What the consumers need from a plan file.
struct PlanFile {
  std::string format;
  int64_t trace_run = 0;
  std::string strategy;
  std::string segment_kind;  // module | region
  Bytes budget_bytes = 0;
  Bytes headroom_bytes = 0;  // kept free below the budget when solving (0 in older plans)
  std::vector<std::string> units;
  std::vector<std::vector<std::string>> checkpoint;
  // Per `checkpoint` entry: "whole" or "selective", and the operator calls kept
  // (from `segments[]` of a v2 plan; "whole" and none otherwise).
  std::vector<std::string> policy;
  std::vector<std::vector<std::string>> save;
  // Per `checkpoint` entry, from `segments[]` (v2): the chain units it spans
  // (over the module tree a block is checkpointed by its sub-modules; the
  // entry's own names otherwise), the module the python runtime wraps ("" when
  // not named) and the bytes a selective segment keeps (0 when whole).
  std::vector<std::vector<std::string>> segment_units;
  std::vector<std::string> module;
  std::vector<Bytes> kept;
  std::vector<std::string> blocks;  // over the module tree: the level `units` were split from
  Bytes predicted_peak = 0;
  Ns predicted_recompute_ns = 0;
  Ns predicted_step_ns = 0;
  Bytes baseline_peak = 0;
  Ns baseline_step_ns = 0;
  // Reserved memory (the CUDA caching allocator's, predicted): -1 when the
  // plan has none (host runs, older plans). `budget_memory` says which peak
  // budget_bytes bounds: "reserved" or "allocated" (older plans).
  Bytes predicted_reserved_peak = -1;
  Bytes baseline_reserved_peak = -1;
  std::string budget_memory = "allocated";
  nlohmann::json json;  // the whole document
};

// What the reader does with the plan: applying it (verify, apply) needs its
// budget; showing it (the GUI) reads one without (budget_bytes 0).
enum class PlanUse { Apply, Show };

// Throws AdviceError naming `where` and the field at fault.
PlanFile parsePlan(const nlohmann::json& doc, const std::string& where, PlanUse use = PlanUse::Apply);
PlanFile readPlanFile(const std::string& path);
// The text of a plan (a file's, a stored plan's); `where` names it in errors.
// Rejects JSON nested deeper than any plan is before building it.
PlanFile parsePlanText(const std::string& text, const std::string& where, PlanUse use = PlanUse::Apply);

}  // namespace gcprof::advisor
