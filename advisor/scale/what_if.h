// `gcprof advise --what-if`: from runs of one job at a few sizes, the largest
// size that fits a budget with each strategy, a table of peak against size,
// and, for a requested size, the optimal plan that makes it fit.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scale/size_predictor.h"

namespace gcprof::advisor {

struct WhatIfRequest {
  AdviceRequest advice;            // units, segment kind, budget (required), strategy of the sized plan
  std::string size_name = "size";  // batch, seq, ...
  std::optional<GrowthForm> form;  // default: what the data supports
  SizeMeasure measure = SizeMeasure::Count;  // Side: fits over the side's square (--side)
  std::optional<int64_t> size;     // plan for this size
  int64_t max_size = 1 << 20;      // the search stops here
  // Only multiples of it are sizes the job takes (a patch-16 ViT's side):
  // the search, the table and the suggested size keep to them.
  int64_t size_step = 1;
};

struct StrategyAtSize {
  std::string strategy;  // none | every | uniform | optimal
  SizePrediction prediction;
  bool fits = false;
};

struct LargestSize {
  std::string strategy;
  int64_t size = 0;      // 0: not even size 1 fits
  bool capped = false;   // still fits at max_size
  StrategyAtSize at;     // the prediction at `size` (when > 0)
};

struct WhatIfRow {
  int64_t size = 0;
  bool recorded = false;
  std::vector<StrategyAtSize> plans;  // none, every, uniform, optimal
};

// A size asked about (the largest that fits, or --size) far beyond the
// recorded ones: the error of a fit grows with the distance, in units of
// the recorded span (largest - smallest recorded size).
struct Extrapolation {
  int64_t size = 0;     // the farthest size asked about
  double spans = 0;     // (size - largest recorded) / (largest - smallest recorded)
  int64_t suggest = 0;  // record this size too to bring `spans` to kMaxExtrapolationSpans
};
// Measured (bench/RESULTS.md, "What fits"): from batch 2, 4 and 8 the
// python sample's peaks at batch 32 (4 spans) were exact; from 2 and 4
// (14 spans) `every` was 1% high, enough to move the largest batch by two.
constexpr double kMaxExtrapolationSpans = 4;

struct WhatIf {
  std::string size_name;
  GrowthForm form = GrowthForm::Affine;
  SizeMeasure measure = SizeMeasure::Count;
  int64_t size_step = 1;
  SegmentKind kind = SegmentKind::Region;
  Bytes budget = 0;
  std::string budget_text;
  Headroom headroom;  // kept free below the budget, as advise keeps it (plan/headroom.h)
  std::vector<std::pair<int64_t, int64_t>> runs;  // (run, size), by size
  std::vector<LargestSize> largest;              // none, every, uniform, optimal
  std::vector<WhatIfRow> table;                  // by size
  FitCheck fit_check;                            // the model at the recorded sizes
  TimeFit step_time;                             // the baseline step time over the fit variable
  std::vector<std::pair<int64_t, Ns>> recorded_steps;  // (size, baseline step time), by size
  std::optional<Extrapolation> extrapolation;    // set when beyond kMaxExtrapolationSpans
  std::vector<int64_t> arguments_unmatched;      // sizesWithoutArguments (chain_scaling.h)
  std::optional<Advice> plan;                    // for request.size (request.advice.strategy)
  int64_t plan_size = 0;
};

// `runs` are the job's runs (trace and size); throws AdviceError for bad input.
WhatIf whatIf(const std::vector<std::pair<int64_t, const Trace*>>& runs, const WhatIfRequest& request);

// The what-if as JSON: the "what_if" section of a plan file and `--json`.
nlohmann::json whatIfJson(const WhatIf& w);

// The plan file for request.size: a normal gcprof.plan/1 plan made on the
// largest recorded run, marked with the size and carrying the what-if.
nlohmann::json sizedPlanJson(const WhatIf& w);

}  // namespace gcprof::advisor
