#include "verify/compile_budgets.h"

#include <algorithm>
#include <cstdlib>

#include "advice_error.h"
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

CompileBudgetRun judgeCompileBudget(const Trace& recorded, const Trace& measured, double value, int exit_code) {
  CompileBudgetRun r;
  r.value = value;
  r.run = measured.run.id;
  r.exit_code = exit_code;
  r.peak = memoryCurve(measured).peak;
  StepTime steps = stepTime(measured, {});
  r.step_ns = steps.ns;
  r.steps = steps.steps;
  r.losses = lossesGate(recorded, measured, kCompileLossTolerance);
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
