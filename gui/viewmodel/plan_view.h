// A gcprof.plan/1 document (docs/plan.md) as the GUI shows it: which units are
// checkpointed, the budget line, the advisor's predictions. Parsing never
// throws: a plan the GUI cannot read is listed with its error instead.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "byte_text.h"
#include "trace.h"
#include "trace_store.h"

namespace gcprof::view {

struct PlanView {
  int64_t id = 0;
  int64_t run = 0;
  std::string strategy;
  Bytes budget = 0;
  std::vector<std::string> units;                    // forward order
  std::vector<std::vector<std::string>> checkpoint;  // segments of consecutive units
  Bytes predicted_peak = -1;                         // -1 = not given
  Ns predicted_recompute = -1;
  Ns predicted_step = -1;
  std::string json;   // the document itself, handed to the advisor's simulator
  std::string error;  // non-empty: the document could not be read

  bool checkpointed(const std::string& unit) const { return checkpointed_.count(unit) > 0; }
  std::string label() const;  // "plan 3: optimal, budget 6.0 GiB"

  static PlanView fromRecord(const PlanRecord& record);

 private:
  std::set<std::string> checkpointed_;
};

// Durations are spelled where sizes are (byte_text.h), for the CLI and the GUI alike.
using gcprof::formatDuration;

}  // namespace gcprof::view
