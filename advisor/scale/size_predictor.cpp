#include "scale/size_predictor.h"

#include <algorithm>
#include <cmath>

#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

std::vector<SizedChain> chainsOf(const std::vector<SizedAdvice>& runs) {
  std::vector<SizedChain> out;
  for (const SizedAdvice& r : runs)
    out.push_back({static_cast<double>(r.size), r.advice.run.id, r.advice.chain,
                   liveAllocationsAtStep(*r.trace, r.advice.filter, r.advice.chain.steady_step)});
  return out;
}

GrowthForm formFor(const std::vector<SizedAdvice>& runs, std::optional<GrowthForm> form, SizeMeasure measure) {
  return form ? *form : peakGrowthForm(chainsOf(runs), measure);
}

}  // namespace

SizePredictor::SizePredictor(const std::vector<SizedAdvice>& runs, std::optional<GrowthForm> form,
                             SizeMeasure measure)
    : runs_(runs), scaling_(chainsOf(runs), formFor(runs, form, measure), measure) {
  kind_ = runs_.front().advice.kind;
  options_ = defaultSolverOptions(units(), kind_);
  for (const SizedAdvice& r : runs_)
    step_times_.push_back({fitVariable(static_cast<double>(r.size), measure),
                           static_cast<double>(r.advice.baseline.step_ns)});
  step_fit_ = fitTime(step_times_, scaling_.form());
}

const UnitChain& SizePredictor::chainAt(int64_t size) {
  auto it = chains_.find(size);
  if (it == chains_.end()) it = chains_.emplace(size, scaling_.at(static_cast<double>(size))).first;
  return it->second;
}

Bytes SizePredictor::simulatedMinusChain(const SizedAdvice& run, const Segments& plan) {
  const Advice& a = run.advice;
  Bytes simulated = plan.empty() ? a.baseline.peak : outcomeOf(*run.trace, a, "what-if", plan).peak;
  return simulated - evaluateChain(a.chain, plan).peak;
}

double SizePredictor::correction(const Segments& plan, int64_t size, const ChainPeak& at_size) {
  // The recorded runs nearest in size first (the larger one on a tie); the
  // first whose chain peak for this plan is set by the same moment.
  std::vector<const SizedAdvice*> order;
  for (const SizedAdvice& r : runs_) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [&](const SizedAdvice* a, const SizedAdvice* b) {
    int64_t da = std::llabs(a->size - size), db = std::llabs(b->size - size);
    return da != db ? da < db : a->size > b->size;
  });
  for (const SizedAdvice* r : order) {
    ChainPeak there = evaluateChain(r->advice.chain, plan);
    if (there.where_kind != at_size.where_kind || there.where_first != at_size.where_first ||
        there.where_last != at_size.where_last)
      continue;
    std::pair<std::vector<std::pair<int, int>>, int64_t> key;
    for (const Segment& s : plan) key.first.push_back({s.first, s.last});
    key.second = r->size;
    auto it = corrections_.find(key);
    if (it == corrections_.end()) it = corrections_.emplace(key, simulatedMinusChain(*r, plan)).first;
    return static_cast<double>(it->second);
  }
  return 0;
}

SizePrediction SizePredictor::predict(const Segments& plan, int64_t size) {
  const UnitChain& chain = chainAt(size);
  ChainPeak cp = evaluateChain(chain, plan);
  SizePrediction p;
  p.segments = plan;
  p.peak = std::max<Bytes>(0, cp.peak + std::llround(correction(plan, size, cp)));
  p.chain_peak = cp.peak;
  p.recompute_ns = cp.recompute_ns;
  p.step_ns = std::llround(step_fit_.at(fitVariable(static_cast<double>(size), measure()))) +
              cp.recompute_ns;
  return p;
}

std::optional<SizePrediction> SizePredictor::optimal(int64_t size, Bytes budget) {
  const UnitChain& chain = chainAt(size);
  std::optional<SizePrediction> best;
  // As advise's optimalWithinBudget: the chain optimum nearly always fits;
  // when the prediction disagrees, the chain budget is lowered by the excess.
  Bytes target = budget;
  for (int attempt = 0; attempt < 8; ++attempt) {
    Solution s = solveOptimal(chain, target, options_);
    if (!s.feasible) break;
    SizePrediction p = predict(s.segments, size);
    if (p.peak <= budget) {
      best = p;
      break;
    }
    target -= std::max<Bytes>(1, p.peak - budget);
  }
  int n = units();
  for (const Segments& fixed : {Segments{}, everyUnit(n), uniformPlan(n, kind_)}) {
    SizePrediction p = predict(fixed, size);
    if (p.peak <= budget && (!best || p.recompute_ns < best->recompute_ns)) best = p;
  }
  if (!best) {
    SizePrediction least = minimum(size);
    if (least.peak <= budget) best = least;
  }
  return best;
}

SizePrediction SizePredictor::minimum(int64_t size) {
  return predict(minimumPeak(chainAt(size), options_).segments, size);
}

}  // namespace gcprof::advisor
