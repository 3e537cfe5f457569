#include "verify/compile_budgets.h"

#include <algorithm>
#include <cstdlib>

#include "advice_error.h"
#include "median.h"
#include "memory/memory_curve.h"
#include "units/step_time.h"

namespace gcprof::advisor {

std::vector<double> parseCompileBudgets(const std::string& text) {
  std::vector<double> values;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string word = text.substr(at, comma - at);
    char* end = nullptr;
    double v = word.empty() ? -1 : std::strtod(word.c_str(), &end);
    if (word.empty() || *end != '\0' || !(v >= 0 && v <= 1))
      throw AdviceError("--compile-budgets '" + text + "': '" + word +
                        "' is not an activation_memory_budget (a number from 0 to 1); give values "
                        "separated by commas, e.g. 0.2,0.4,0.6,0.8");
    if (std::find(values.begin(), values.end(), v) != values.end())
      throw AdviceError("--compile-budgets '" + text + "': " + word + " is given twice");
    values.push_back(v);
    at = comma + 1;
  }
  return values;
}

double compiledWith(const Trace& run) {
  for (const Scalar& s : run.scalars)
    if (s.name == "activation_memory_budget") return s.value;
  return -1;
}

Ns compiledStepTime(const Trace& run) {
  std::vector<Step> steps = run.steps;
  if (steps.size() < 3) return stepTime(run, {}).ns;
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.index < b.index; });
  std::vector<Ns> ns;
  for (size_t i = 2; i < steps.size(); ++i) ns.push_back(steps[i].end - steps[i].start);
  return median(std::move(ns));
}

CompileBudgetRun judgeCompileBudget(const Trace& recorded, const Trace& measured, double value, int exit_code) {
  CompileBudgetRun r;
  r.value = value;
  r.run = measured.run.id;
  r.exit_code = exit_code;
  r.peak = memoryCurve(measured).peak;
  r.step_ns = compiledStepTime(measured);
  r.steps = std::max(measured.steps.size(), stepTime(measured, {}).steps);
  r.losses = lossesGate(recorded, measured, kCompileLossTolerance);
  r.compiled_with = compiledWith(measured);
  return r;
}

int fastestWithin(const std::vector<CompileBudgetRun>& runs, Bytes budget) {
  int best = -1;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].sound() && runs[i].peak <= budget && (best < 0 || runs[i].step_ns < runs[best].step_ns))
      best = static_cast<int>(i);
  return best;
}

}  // namespace gcprof::advisor
