// A gcprof.plan/2 (or /1) document (docs/plan.md) as the GUI shows it: which units are
// checkpointed, the budget line, the advisor's predictions. Read by the
// advisor's plan reader (plan_file.h), but never throws: a plan the GUI
// cannot read is listed with its error instead.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "byte_text.h"
#include "trace.h"
#include "trace_store.h"

namespace gcprof::advisor {
struct PlanFile;
}

namespace gcprof::view {

struct PlanView {
  int64_t id = 0;
  int64_t run = 0;
  std::string strategy;
  Bytes budget = 0;
  std::vector<std::string> units;                    // forward order
  std::vector<std::vector<std::string>> checkpoint;  // segments of consecutive units
  // v2 plans: the modules the python runtime wraps, at any depth. Empty for v1 plans.
  std::vector<std::string> modules;
  std::vector<std::string> blocks;  // v2 plans over the module tree: the level `units` were split from
  Bytes predicted_peak = -1;                         // -1 = not given
  Ns predicted_recompute = -1;
  Ns predicted_step = -1;
  std::string json;   // the document itself
  std::shared_ptr<const advisor::PlanFile> file;  // as read, for the advisor's simulator; null on error
  std::string error;  // non-empty: the document could not be read

  // Per `checkpoint` segment, the operator calls a selective segment keeps
  // (plan v2 `segments[].save`; empty: the whole module is recomputed).
  std::vector<std::vector<std::string>> save;
  std::vector<Bytes> kept;  // bytes those outputs keep (`segments[].kept_bytes`; 0 when whole)

  bool checkpointed(const std::string& unit) const { return checkpointed_.count(unit) > 0; }
  // The module whose checkpoint covers `unit`: the unit itself, or in a
  // plan over the module tree the block wrapped whole ("" when none).
  std::string checkpointedAs(const std::string& unit) const;
  // The save-list of a selective unit; nullptr when whole or not checkpointed.
  const std::vector<std::string>* saveList(const std::string& unit) const;
  std::string label() const;  // "plan 3: optimal, budget 6.0 GiB"

  static PlanView fromRecord(const PlanRecord& record);

 private:
  std::set<std::string> checkpointed_;
  std::map<std::string, std::string> wrapped_by_;  // v2: unit -> its segment's module
};

// Durations are spelled where sizes are (byte_text.h), for the CLI and the GUI alike.
using gcprof::formatDuration;

}  // namespace gcprof::view
