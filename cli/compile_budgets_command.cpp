// `gcprof verify --compile-budgets`: a job that trains under torch.compile
// re-run once per activation_memory_budget value, each run measured and
// judged (advisor/verify/compile_budgets.h), beside an eager plan's
// verification when one is given.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "budget_option.h"
#include "job.h"
#include "memory/memory_curve.h"
#include "size_parse.h"
#include "trace_store.h"
#include "units/unit_selection.h"
#include "verify/compile_budgets.h"
#include "verify_command.h"

namespace gcprof::cli {
namespace {

// The newest recorded (not re-run) run whose model ran under torch.compile.
int64_t compiledRun(TraceStore& store, const std::string& trace, Trace& loaded) {
  std::vector<RunInfo> runs = store.runs();
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->baseline_run != 0 || it->job_run != 0) continue;
    loaded = store.load(it->id);
    if (!advisor::compiledModel(loaded).empty()) return it->id;
  }
  throw StoreError(trace + ": no recorded run ran a model under torch.compile (the python shim marks "
                   "one with a range \"torch.compile <class>\"); --compile-budgets re-runs such a job, "
                   "`gcprof verify --plan` any other");
}

Bytes sweepBudget(const VerifyArgs& a, Bytes recorded_peak) {
  if (a.budget.empty())
    throw StoreError("--compile-budgets needs --budget SIZE (e.g. 300MiB, or 60% of the recorded peak): "
                     "the memory the runs must fit");
  try {
    return parseBudget(a.budget).resolve(recorded_peak);
  } catch (const std::invalid_argument& e) {
    throw StoreError(std::string("--budget: ") + e.what());
  }
}

std::string fmtValue(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

void printCompileRuns(const std::vector<advisor::CompileBudgetRun>& runs, const Trace& recorded,
                      Ns recorded_step, Bytes budget) {
  auto mib = [](Bytes b) { return static_cast<double>(b) / (1 << 20); };
  double own = advisor::compiledWith(recorded);
  std::string with = own < 0 ? "" : " with activation_memory_budget " + std::string(fmtValue(own));
  std::printf("torch.compile activation_memory_budget values, one run each, against run %lld (%s under "
              "torch.compile%s: peak %.1f MiB, step %.1f ms)\n",
              static_cast<long long>(recorded.run.id), advisor::compiledModel(recorded).c_str(), with.c_str(),
              mib(advisor::memoryCurve(recorded).peak), recorded_step / 1e6);
  std::printf("  %6s %5s %12s %11s %9s  %-6s %s\n", "value", "run", "peak", "step time", "slowdown",
              "fits", "losses (to 1e-3 of the recorded run's)");
  std::printf("  (step time: the median step after the first two, which compile)\n");
  for (const advisor::CompileBudgetRun& r : runs) {
    std::string fits = !r.sound() ? "n/a" : r.peak <= budget ? "yes" : "no";
    char other[200];
    if (r.compiled_with < 0)
      std::snprintf(other, sizeof other, "no call of a compiled model was recorded: the value was not seen "
                                         "to apply (does the job compile a function rather than a module?)");
    else
      std::snprintf(other, sizeof other, "compiled with %g, not this value", r.compiled_with);
    std::string losses = r.exit_code != 0 ? "the run exited with " + std::to_string(r.exit_code)
                         : !r.applied()   ? std::string(other)
                         : r.steps == 0   ? "no steps recorded"
                                          : std::string(r.losses.passed ? "match: " : "DIFFER: ") + r.losses.detail;
    std::printf("  %6g %5lld %8.1f MiB %8.1f ms %+8.1f%%  %-6s %s\n", r.value, static_cast<long long>(r.run),
                mib(r.peak), r.step_ns / 1e6, recorded_step > 0 ? (double(r.step_ns) / recorded_step - 1) * 100 : 0.0,
                fits.c_str(), losses.c_str());
  }
  std::printf("the peak does not fall monotonically as the value falls (Inductor's partitioner), so "
              "every value was run; a value between two that fit may not fit\n");
}

// The eager plan verified as `verify --plan` does (printed unless --json).
advisor::Verification verifyEagerPlan(const VerifyArgs& a) {
  if (!a.json) {
    std::printf("\nthe eager plan %s (torch.compile off), verified:\n", a.plan.c_str());
    std::fflush(stdout);
  }
  VerifyArgs eager = a;
  eager.compile_budgets.clear();
  eager.command.clear();
  eager.json = false;
  eager.quiet = a.json;
  advisor::Verification v;
  runVerify(eager, &v);
  return v;
}

// The eager plan against the fastest value that fits.
void printEagerComparison(const advisor::CompileBudgetSweep& sweep) {
  const advisor::Verification& v = *sweep.eager;
  std::string within = "within " + formatBytes(sweep.budget);
  if (!advisor::eagerPlanFits(v, sweep.budget)) {
    std::printf("the eager plan does not pass or does not fit %s\n", within.c_str());
    return;
  }
  int best = advisor::fastestWithin(sweep.runs, sweep.budget);
  // One run each: on a shared machine a few percent is noise.
  const char* tie = "";
  if (best >= 0) {
    double faster = std::min(v.measured_step_ns, sweep.runs[best].step_ns);
    double slower = std::max(v.measured_step_ns, sweep.runs[best].step_ns);
    if (slower < 1.1 * faster) tie = "; within 10%, which one run each cannot separate on a busy machine";
  }
  if (advisor::fastestAnswer(sweep).eager_plan) {
    char against[120] = "";
    if (best >= 0)
      std::snprintf(against, sizeof against, ", against %.1f ms for activation_memory_budget %g",
                    sweep.runs[best].step_ns / 1e6, sweep.runs[best].value);
    std::printf("fastest %s: the eager plan %s (%s, %.1f ms per step%s%s)\n", within.c_str(),
                sweep.eager_plan.c_str(), formatBytes(v.measured_peak).c_str(), v.measured_step_ns / 1e6, against,
                tie);
  } else {
    std::printf("the eager plan fits too (%s, %.1f ms per step) but activation_memory_budget %g is faster%s\n",
                formatBytes(v.measured_peak).c_str(), v.measured_step_ns / 1e6, sweep.runs[best].value, tie);
  }
}

void printFastestValue(const advisor::CompileBudgetSweep& sweep) {
  int best = advisor::fastestWithin(sweep.runs, sweep.budget);
  std::string within = "within " + formatBytes(sweep.budget);
  if (best >= 0)
    std::printf("fastest %s: activation_memory_budget %g (%s, %.1f ms per step): set "
                "torch._functorch.config.activation_memory_budget = %g in the job before its first "
                "compiled call\n",
                within.c_str(), sweep.runs[best].value, formatBytes(sweep.runs[best].peak).c_str(),
                sweep.runs[best].step_ns / 1e6, sweep.runs[best].value);
  else
    std::printf("no value fits %s; try other values, or plan eagerly: record with TORCH_COMPILE_DISABLE=1, "
                "gcprof advise, then give the plan here with --plan\n",
                within.c_str());
}

}  // namespace

int runCompileBudgets(const VerifyArgs& a) {
  std::vector<double> values = advisor::parseCompileBudgets(a.compile_budgets);
  requireWritableTrace(a.trace);
  TraceStore store(a.trace, TraceStore::Mode::ReadWrite);
  Trace recorded;
  int64_t recorded_id = compiledRun(store, a.trace, recorded);
  if (jobOf(store, recorded_id).distributed())
    throw StoreError(a.trace + ": run " + std::to_string(recorded_id) + " is a distributed job; "
                     "--compile-budgets re-runs single-process jobs only");
  Bytes budget = sweepBudget(a, advisor::memoryCurve(recorded).peak);
  LaunchOptions o;
  o.trace = absolutePath(a.trace);
  o.backend = a.backend != "auto" ? a.backend : (recorded.run.backend == "cuda" ? "cuda" : "auto");
  o.min_bytes = recorded.run.min_bytes > 0 ? recorded.run.min_bytes : o.min_bytes;
  o.baseline_run = recorded_id;
  RestoredEnvironment env;
  if (!a.command.empty())
    o.argv = a.command;
  else
    env = useRecordedCommand(o, a, recorded.run, std::nullopt);
  o.timeout_s = a.timeout_s >= 0 ? a.timeout_s : defaultTimeout(recorded.run);
  o.flush_wait_ms = parseFlushWaitMs(a.flush_wait);
  o.job_stdout_to_stderr = a.json;
  printLaunch(stderr, o, a.command.empty() ? "run " + std::to_string(recorded_id) + " of " + a.trace : "after --",
              env);
  if (a.dry_run) return 0;
  std::vector<advisor::CompileBudgetRun> runs;
  for (double value : values) {
    std::string text = fmtValue(value);
    o.extra_env["GCPROF_COMPILE_BUDGET"] = text;
    o.name = "compile budget " + text;
    std::fprintf(stderr, "gcprof verify: re-running run %lld with activation_memory_budget %s\n",
                 static_cast<long long>(recorded_id), text.c_str());
    LaunchResult r = launchShowingProgress(o, store);
    int64_t run_id = rerunOf(store, store.run(recorded_id), r);
    advisor::CompileBudgetRun judged;
    if (run_id != 0) {
      judged = advisor::judgeCompileBudget(recorded, store.load(run_id), value, r.exit_code);
    } else {
      judged.value = value;
      judged.exit_code = r.exit_code != 0 ? r.exit_code : -1;
    }
    runs.push_back(judged);
  }
  advisor::CompileBudgetSweep sweep;
  sweep.budget = budget;
  sweep.recorded_run = recorded_id;
  sweep.model = advisor::compiledModel(recorded);
  sweep.recorded_with = advisor::compiledWith(recorded);
  sweep.recorded_peak = advisor::memoryCurve(recorded).peak;
  sweep.recorded_step_ns = advisor::compiledStepTime(recorded);
  sweep.runs = std::move(runs);
  if (!a.json) {
    printCompileRuns(sweep.runs, recorded, sweep.recorded_step_ns, budget);
    printFastestValue(sweep);
  }
  if (!a.plan.empty()) {
    sweep.eager_plan = a.plan;
    sweep.eager = verifyEagerPlan(a);
    if (!a.json) printEagerComparison(sweep);
  }
  if (a.json) std::printf("%s\n", advisor::toJson(sweep).dump(2).c_str());
  return advisor::fastestAnswer(sweep).none() ? 1 : 0;
}

}  // namespace gcprof::cli
