#include "scale/what_if.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "byte_text.h"
#include "advice_error.h"
#include "plan/plan_file.h"
#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

const char* const kStrategies[] = {"none", "every", "uniform", "optimal"};

StrategyAtSize strategyAt(SizePredictor& p, const std::string& strategy, int64_t size, Bytes budget) {
  StrategyAtSize s;
  s.strategy = strategy;
  int n = p.units();
  if (strategy == "optimal") {
    auto best = p.optimal(size, budget);
    s.prediction = best ? *best : p.minimum(size);
  } else {
    Segments plan = strategy == "none" ? Segments{} : strategy == "every" ? everyUnit(n) : uniformPlan(n, p.kind());
    s.prediction = p.predict(plan, size);
  }
  s.fits = s.prediction.peak <= budget;
  return s;
}

// Memory grows with the size, so the sizes that fit are step, 2 step, ..,
// L: double the multiple until one does not fit, then bisect.
LargestSize largestFitting(SizePredictor& p, const std::string& strategy, Bytes budget, int64_t max_size,
                           int64_t step) {
  LargestSize l;
  l.strategy = strategy;
  auto fits = [&](int64_t k) { return strategyAt(p, strategy, k * step, budget).fits; };
  const int64_t cap = max_size / step;
  if (cap < 1 || !fits(1)) return l;
  int64_t lo = 1, hi = 2;
  while (hi <= cap && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > cap) {
    if (fits(cap)) {
      lo = cap;
      l.capped = true;
    }
    hi = std::min(hi, cap);
  }
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  l.size = lo * step;
  l.at = strategyAt(p, strategy, l.size, budget);
  return l;
}

PlanOutcome outcomeFrom(const std::string& name, const StrategyAtSize& s) {
  PlanOutcome o;
  o.name = name;
  o.segments = s.prediction.segments;
  o.peak = s.prediction.peak;
  o.recompute_ns = s.prediction.recompute_ns;
  o.step_ns = s.prediction.step_ns;
  o.fits = s.fits;
  return o;
}

// The Advice a plan file is written from, at the requested size: the
// largest recorded run's, with the scaled chain and the predicted outcomes.
Advice adviceAtSize(SizePredictor& p, const SizedAdvice& shape, int64_t size, const WhatIf& w,
                    Strategy strategy) {
  Advice a = shape.advice;
  a.chain = p.chainAt(size);
  a.strategy = strategy;
  a.has_budget = true;
  a.budget = w.budget;
  a.budget_text = w.budget_text;
  a.headroom = w.headroom;
  a.max_slowdown.reset();
  Bytes limit = a.limit();
  a.baseline = outcomeFrom("none", strategyAt(p, "none", size, limit));
  a.every = outcomeFrom("every", strategyAt(p, "every", size, limit));
  a.uniform = outcomeFrom("uniform", strategyAt(p, "uniform", size, limit));
  a.chosen = outcomeFrom(toString(strategy), strategyAt(p, toString(strategy), size, limit));
  a.feasible = a.chosen.fits;
  a.exact = false;  // a prediction, not a search on a recorded run
  for (PlanOutcome* o : {&a.baseline, &a.every, &a.uniform, &a.chosen}) {
    ChainPeak cp = evaluateChain(a.chain, o->segments);
    o->chain_peak = cp.peak;
    o->peak_where = whereOf(a.chain, cp);
  }
  if (!a.feasible)
    a.message = "no " + toString(strategy) + " plan is predicted to fit " + formatBytes(limit) +
                " at size " + std::to_string(size) + ": it peaks at " + formatBytes(a.chosen.peak) +
                (strategy == Strategy::Optimal ? " at the least" : "");
  return a;
}

nlohmann::json strategyJson(const StrategyAtSize& s) {
  int units = 0;
  for (const Segment& seg : s.prediction.segments) units += seg.last - seg.first + 1;
  return {{"strategy", s.strategy},   {"peak_bytes", s.prediction.peak}, {"chain_peak_bytes", s.prediction.chain_peak},
          {"step_ns", s.prediction.step_ns}, {"recompute_ns", s.prediction.recompute_ns},
          {"checkpointed_units", units}, {"fits_budget", s.fits}};
}

// The farthest size asked about, when it is too far past the recorded ones.
std::optional<Extrapolation> extrapolationOf(const WhatIf& w, std::optional<int64_t> requested) {
  int64_t smallest = w.runs.front().second, largest = w.runs.back().second;  // runs are by size
  int64_t asked = requested.value_or(0);
  for (const LargestSize& l : w.largest)
    if (!l.capped) asked = std::max(asked, l.size);
  Extrapolation e;
  e.size = asked;
  e.spans = static_cast<double>(asked - largest) / static_cast<double>(largest - smallest);
  if (e.spans <= kMaxExtrapolationSpans) return std::nullopt;
  // (asked - s) <= k (s - smallest)  <=>  s >= (asked + k smallest) / (k + 1)
  double k = kMaxExtrapolationSpans;
  e.suggest = std::max<int64_t>(largest + 1, static_cast<int64_t>(std::ceil((asked + k * smallest) / (k + 1))));
  e.suggest = (e.suggest + w.size_step - 1) / w.size_step * w.size_step;  // a size the job takes
  return e;
}

// How the step-time column was fitted, for whatIfNotes (report/what_if_table.h).
nlohmann::json stepTimeJson(const WhatIf& w) {
  const TimeFit& t = w.step_time;
  nlohmann::json recorded = nlohmann::json::array();
  for (const auto& [size, ns] : w.recorded_steps) recorded.push_back({{"size", size}, {"step_ns", ns}});
  return {{"sizes", t.sizes},
          {"proportional", t.proportional},
          {"recorded", recorded},
          {"miss_ns", std::llround(t.residual.miss)},
          {"miss_size", std::llround(sizeOfVariable(t.residual.size, w.measure))},
          {"fraction", t.residualFraction()}};
}

}  // namespace

WhatIf whatIf(const std::vector<std::pair<int64_t, const Trace*>>& runs, const WhatIfRequest& req) {
  if (!req.advice.budget) throw AdviceError("--what-if needs --budget (a size such as 6GiB)");
  if (req.advice.max_slowdown)
    throw AdviceError("--what-if answers for a budget; --max-slowdown is not used there (drop it)");
  WhatIf w;
  w.size_name = req.size_name;
  std::vector<SizedAdvice> sized;
  AdviceRequest each = req.advice;
  each.tree = false;  // the chain is fitted over sizes unit by unit: one level
  each.moments = true;  // fitted one by one (chain_scaling.h)
  each.strategy = Strategy::None;
  each.budget.reset();
  each.max_slowdown.reset();
  for (const auto& [size, trace] : runs) sized.push_back({size, trace, advise(*trace, each)});
  std::sort(sized.begin(), sized.end(), [](const SizedAdvice& a, const SizedAdvice& b) { return a.size < b.size; });
  if (req.size_step < 1) throw AdviceError("--size-step must be at least 1");
  for (const SizedAdvice& r : sized)
    if (r.size % req.size_step != 0)
      throw AdviceError("run " + std::to_string(r.advice.run.id) + " was recorded at " + req.size_name + "=" +
                        std::to_string(r.size) + ", not a multiple of --size-step " +
                        std::to_string(req.size_step) + ": is the step right?");
  if (req.size && *req.size % req.size_step != 0)
    throw AdviceError("--size " + std::to_string(*req.size) + " is not a multiple of --size-step " +
                      std::to_string(req.size_step));
  SizePredictor p(sized, req.form, req.measure);
  w.form = p.form();
  w.measure = p.measure();
  w.size_step = req.size_step;
  w.kind = p.kind();
  // A percentage is of the largest recorded run's peak.
  w.budget = req.advice.budget->resolve(sized.back().advice.baseline.peak);
  w.budget_text = req.advice.budget->text;
  if (w.budget <= 0) throw AdviceError("budget " + w.budget_text + " is not a positive size");
  // The same margin advise keeps (headroom.h), with the largest jitter of the runs.
  TraceMargins margins = traceMargins(*sized.back().trace, sized.back().advice);
  for (const SizedAdvice& r : sized) {
    TraceMargins m = traceMargins(*r.trace, r.advice);
    margins.jitter = std::max(margins.jitter, m.jitter);
    margins.untold_arguments = std::max(margins.untold_arguments, m.untold_arguments);
  }
  w.headroom = resolveHeadroom(req.advice.headroom, w.budget, margins);
  if (w.headroom.bytes < 0 || w.headroom.bytes >= w.budget)
    throw AdviceError("headroom " + formatBytes(w.headroom.bytes) + " (" + w.headroom.rule +
                      ") leaves nothing of the budget " + formatBytes(w.budget) +
                      "; give a smaller --headroom");
  const Bytes limit = w.budget - w.headroom.bytes;
  if (req.size && *req.size <= 0) throw AdviceError("--size must be a positive integer");
  for (const SizedAdvice& r : sized) w.runs.push_back({r.advice.run.id, r.size});

  std::set<int64_t> sizes;
  for (const char* s : kStrategies) {
    w.largest.push_back(largestFitting(p, s, limit, req.max_size, req.size_step));
    if (w.largest.back().size > 0) sizes.insert(w.largest.back().size);
    if (!w.largest.back().capped) sizes.insert(w.largest.back().size + req.size_step);
  }
  for (const SizedAdvice& r : sized) sizes.insert(r.size);
  if (req.size) sizes.insert(*req.size);
  for (int64_t s : sizes) {
    WhatIfRow row;
    row.size = s;
    for (const SizedAdvice& r : sized) row.recorded = row.recorded || r.size == s;
    for (const char* name : kStrategies) row.plans.push_back(strategyAt(p, name, s, limit));
    w.table.push_back(row);
  }
  w.fit_check = p.scaling().check();
  w.step_time = p.stepTimeFit();
  for (const SizedAdvice& r : sized) w.recorded_steps.push_back({r.size, r.advice.baseline.step_ns});
  for (double x : sizesWithoutArguments(p.scaling().runs()))
    w.arguments_unmatched.push_back(std::llround(sizeOfVariable(x, p.measure())));
  w.extrapolation = extrapolationOf(w, req.size);
  if (req.size) {
    w.plan = adviceAtSize(p, sized.back(), *req.size, w, req.advice.strategy);
    w.plan_size = *req.size;
  }
  return w;
}

nlohmann::json whatIfJson(const WhatIf& w) {
  nlohmann::json runs = nlohmann::json::array(), largest = nlohmann::json::array(),
                 table = nlohmann::json::array();
  for (const auto& [run, size] : w.runs) runs.push_back({{"run", run}, {"size", size}});
  for (const LargestSize& l : w.largest) {
    nlohmann::json j = {{"strategy", l.strategy}, {"size", l.size}, {"capped", l.capped}};
    if (l.size > 0) j["at"] = strategyJson(l.at);
    largest.push_back(j);
  }
  for (const WhatIfRow& r : w.table) {
    nlohmann::json plans = nlohmann::json::array();
    for (const StrategyAtSize& s : r.plans) plans.push_back(strategyJson(s));
    table.push_back({{"size", r.size}, {"recorded", r.recorded}, {"plans", plans}});
  }
  const FitCheck& c = w.fit_check;
  nlohmann::json check = {{"size", c.size},         {"miss_bytes", c.miss},     {"recorded_bytes", c.recorded},
                          {"peak_bytes", c.peak},    {"number", c.number},       {"independent", c.independent},
                          {"fraction", c.peak > 0 ? static_cast<double>(c.miss) / static_cast<double>(c.peak) : 0.0}};
  nlohmann::json doc = {{"size_name", w.size_name}, {"fit", toString(w.form)}, {"measure", toString(w.measure)},
                        {"size_step", w.size_step}, {"budget_bytes", w.budget},
                        {"headroom_bytes", w.headroom.bytes},
                        {"budget", w.budget_text},  {"runs", runs},            {"largest", largest},
                        {"table", table},           {"fit_check", check}};
  doc["step_time_fit"] = stepTimeJson(w);
  if (!w.arguments_unmatched.empty()) doc["arguments_unmatched"] = w.arguments_unmatched;
  if (w.extrapolation)
    doc["extrapolation"] = {{"size", w.extrapolation->size}, {"spans", w.extrapolation->spans},
                            {"max_spans", kMaxExtrapolationSpans}, {"suggest_size", w.extrapolation->suggest}};
  return doc;
}

nlohmann::json sizedPlanJson(const WhatIf& w) {
  if (!w.plan) throw AdviceError("no size was requested (--size N)");
  nlohmann::json doc = planJson(*w.plan);
  // The plan is made on the largest recorded run: verify re-runs its command
  // with the size changed from recorded_size to value.
  doc["size"] = {{"name", w.size_name}, {"value", w.plan_size}, {"recorded_size", w.runs.back().second}};
  doc["what_if"] = whatIfJson(w);
  return doc;
}

}  // namespace gcprof::advisor
