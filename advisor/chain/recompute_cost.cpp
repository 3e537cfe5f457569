#include "chain/recompute_cost.h"

#include <functional>

#include "median.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

// The median over the steady training steps of `cost`, the micro-steps of
// one training step (gradient accumulation: same index) added up.
Ns steadyMedian(const RunLayout& layout, const std::function<Ns(const StepLayout&)>& cost) {
  std::vector<Ns> per_step;
  int64_t current = 0;
  for (size_t k = 0; k < layout.steady.size(); ++k) {
    const StepLayout& st = layout.steps[layout.steady[k]];
    Ns c = cost(st);
    if (k > 0 && st.step == current && st.step >= 0) {
      sat::addTo(per_step.back(), c);
      continue;
    }
    current = st.step;
    per_step.push_back(c);
  }
  return median(per_step);
}

Ns stepGapNs(const StepLayout& step, int k) {
  const UnitWindow& u = step.units[k];
  return u.device_time ? 0 : std::max<Ns>(0, sat::sub(step.units[k + 1].fwd_start, u.fwd_end));
}

}  // namespace

std::vector<OpCall> keptCalls(const OpIndex& ops, const StepLayout& step, int unit,
                              const std::vector<std::string>& save) {
  if (save.empty()) return {};
  const UnitWindow& u = step.units[unit];
  return savedCalls(ops.within(u.fwd_start, u.fwd_end), save);
}

Ns selectiveDispatchNs(const OpIndex& ops, const StepLayout& step, int unit) {
  if (ops.selectiveNsPerOp() <= 0) return 0;
  const UnitWindow& u = step.units[unit];
  return sat::mul(static_cast<Ns>(ops.count(u.fwd_start, u.fwd_end)), ops.selectiveNsPerOp());
}

Ns stepRecomputeNs(const StepLayout& step, int first, int last, const std::vector<OpCall>& kept, Ns dispatch_ns) {
  Ns cost = 0;
  for (int k = first; k <= last; ++k) {
    sat::addTo(cost, step.units[k].forward_ns);
    if (k < last) sat::addTo(cost, stepGapNs(step, k));
  }
  for (const OpCall& c : kept) cost = sat::sub(cost, c.end - c.start);
  return sat::add(std::max<Ns>(cost, 0), dispatch_ns);
}

Ns unitRecomputeNs(const RunLayout& layout, const OpIndex& ops, int unit, const std::vector<std::string>& save) {
  return steadyMedian(layout, [&](const StepLayout& st) {
    return stepRecomputeNs(st, unit, unit, keptCalls(ops, st, unit, save),
                           save.empty() ? 0 : selectiveDispatchNs(ops, st, unit));
  });
}

Ns gapRecomputeNs(const RunLayout& layout, int k) {
  return steadyMedian(layout, [&](const StepLayout& st) { return stepGapNs(st, k); });
}

Ns segmentRecomputeNs(const RunLayout& layout, const OpIndex& ops, int first, int last,
                      const std::vector<std::string>& save) {
  Ns t = unitRecomputeNs(layout, ops, first, save);
  for (int k = first + 1; k <= last; ++k)
    t = sat::add(t, sat::add(gapRecomputeNs(layout, k - 1), unitRecomputeNs(layout, ops, k)));
  return t;
}

}  // namespace gcprof::advisor
