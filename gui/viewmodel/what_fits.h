// The GUI's "What fits" view (docs/plan.md "What fits"): the largest batch
// (or sequence length) each strategy fits in a budget, and the predicted peak
// by size. It is read from a what-if, never re-derived: the `what_if` section
// that a sized plan (`advise --what-if NAME --size N -o plan.json`) carries,
// or one the advisor computes for the file's sized runs (`record --name
// batch=4`) at a budget the user picks.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trace.h"

namespace gcprof::view {

struct WhatFits {
  struct Largest {
    std::string strategy;
    int64_t size = 0;       // 0: not even size 1 fits
    bool capped = false;    // still fits where the search stopped
    Bytes peak = -1;        // predicted at `size` (-1 when size is 0)
    Ns step_ns = -1;
  };
  struct Row {
    int64_t size = 0;
    bool recorded = false;      // a size that was recorded
    std::vector<Bytes> peaks;   // one per strategy, in `strategies` order
    std::vector<bool> fits;
  };
  std::string size_name = "size";
  std::string fit;          // affine | quadratic
  std::string budget_text;  // as given: "90%", "6GiB"
  Bytes budget = 0;
  Bytes headroom = 0;       // kept free below the budget
  std::vector<std::string> strategies;
  std::vector<Largest> largest;
  std::vector<Row> rows;
  std::string source;       // "plan 3" | "computed for runs 1, 2"
  // How far to trust it: the fit check and a size to record too, as the
  // terminal and the reports say them (advisor/report/what_if_table.h).
  std::vector<std::string> notes;
};

// From a plan document with a `what_if` section, or a what-if document
// itself (`advise --what-if --json`). nullopt with `why` set otherwise.
std::optional<WhatFits> whatFitsFromJson(const std::string& json, std::string* why);

// The runs of `runs` that are one job at different sizes, from their names
// (`batch=4`), as (run id, size) by size; `name` gets what the size counts.
// Empty when fewer than two (or the advisor is not built in).
std::vector<std::pair<int64_t, int64_t>> sizedRunsOf(const std::vector<RunInfo>& runs, std::string* name);

// The advisor's what-if for `sized` (from sizedRunsOf; `traces` in the same
// order) at `budget_percent` of the largest recorded run's peak. nullopt
// with `why` set when the advisor refuses (its message) or is not built in.
std::optional<WhatFits> computeWhatFits(const std::vector<std::pair<int64_t, int64_t>>& sized,
                                        const std::vector<const Trace*>& traces,
                                        const std::string& size_name, double budget_percent,
                                        std::string* why);

}  // namespace gcprof::view
