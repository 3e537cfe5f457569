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

namespace {

nlohmann::json valueOrNull(double v) { return v < 0 ? nlohmann::json() : nlohmann::json(v); }

}  // namespace

bool eagerPlanFits(const Verification& v, Bytes budget) { return v.verdict == "PASS" && v.measured_peak <= budget; }

CompileBudgetAnswer fastestAnswer(const CompileBudgetSweep& sweep) {
  CompileBudgetAnswer answer;
  answer.value = fastestWithin(sweep.runs, sweep.budget);
  if (sweep.eager && eagerPlanFits(*sweep.eager, sweep.budget) &&
      (answer.value < 0 || sweep.eager->measured_step_ns < sweep.runs[answer.value].step_ns)) {
    answer.value = -1;
    answer.eager_plan = true;
  }
  return answer;
}

nlohmann::json toJson(const CompileBudgetSweep& sweep) {
  nlohmann::json values = nlohmann::json::array();
  for (const CompileBudgetRun& r : sweep.runs)
    values.push_back({{"activation_memory_budget", r.value},
                      {"run", r.run},
                      {"exit_code", r.exit_code},
                      {"compiled_with", valueOrNull(r.compiled_with)},
                      {"applied", r.applied()},
                      {"peak_bytes", r.peak},
                      {"step_ns", r.step_ns},
                      {"steps", r.steps},
                      {"losses", {{"passed", r.losses.passed}, {"detail", r.losses.detail}}},
                      {"fits", r.peak <= sweep.budget},
                      {"counts", r.sound()}});
  nlohmann::json eager;
  if (sweep.eager)
    eager = {{"plan", sweep.eager_plan},
             {"verdict", sweep.eager->verdict},
             {"plan_id", sweep.eager->plan_id},
             {"baseline_run", sweep.eager->baseline_run},
             {"run", sweep.eager->run},
             {"peak_bytes", sweep.eager->measured_peak},
             {"step_ns", sweep.eager->measured_step_ns},
             {"fits", eagerPlanFits(*sweep.eager, sweep.budget)}};
  CompileBudgetAnswer answer = fastestAnswer(sweep);
  nlohmann::json fastest;
  if (answer.eager_plan)
    fastest = {{"what", "eager_plan"}, {"plan", sweep.eager_plan}, {"run", sweep.eager->run},
               {"peak_bytes", sweep.eager->measured_peak}, {"step_ns", sweep.eager->measured_step_ns}};
  else if (!answer.none()) {
    const CompileBudgetRun& r = sweep.runs[answer.value];
    fastest = {{"what", "activation_memory_budget"}, {"activation_memory_budget", r.value}, {"run", r.run},
               {"peak_bytes", r.peak}, {"step_ns", r.step_ns}};
  }
  return {{"budget_bytes", sweep.budget},
          {"recorded",
           {{"run", sweep.recorded_run}, {"model", sweep.model}, {"compiled_with", valueOrNull(sweep.recorded_with)},
            {"peak_bytes", sweep.recorded_peak}, {"step_ns", sweep.recorded_step_ns}}},
          {"values", values},
          {"eager_plan", eager},
          {"fastest", fastest}};
}

}  // namespace gcprof::advisor
