// torch.compile's activation_memory_budget, measured rather than predicted:
// `gcprof verify --compile-budgets` re-runs a compiled job once per value
// (the shim sets it from GCPROF_COMPILE_BUDGET) and these judge the runs.
// Inductor's partitioner is not monotonic in the value (a lower value can
// peak higher), so every value of the grid is run; none is inferred from
// its neighbours.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace.h"
#include "verify/verification.h"

namespace gcprof::advisor {

// Another value makes Inductor fuse, order and recompute other kernels, and
// with dropout its draws can differ (2e-4 relative on the bench's GPT with
// dropout 0.1), so losses match the recorded compiled run closely, not bit
// for bit; a larger difference means the run trained something else.
constexpr double kCompileLossTolerance = 1e-3;

struct CompileBudgetRun {
  double value = 0;  // activation_memory_budget
  int64_t run = 0;   // the re-run's run id; 0 when it created none
  int exit_code = 0;
  Bytes peak = 0;
  Ns step_ns = 0;  // compiledStepTime
  size_t steps = 0;  // steps recorded
  Gate losses;  // against the recorded run, kCompileLossTolerance
  double compiled_with = -1;  // compiledWith(the re-run)
  // Compiled with the value, exited 0, recorded steps, and its losses
  // match: its peak and time count.
  bool applied() const { return compiled_with == value; }
  bool sound() const { return applied() && exit_code == 0 && steps > 0 && losses.passed; }
};

// "0.2,0.5,0.8" -> {0.2, 0.5, 0.8}: numbers from 0 to 1, each once. Throws
// AdviceError naming the text.
std::vector<double> parseCompileBudgets(const std::string& text);

// The activation_memory_budget the run's model was compiled with (the shim's
// scalar, compile_budget.py); -1 when it has none.
double compiledWith(const Trace& run);

// The median step after the first two: torch.compile compiles in the first
// step and may recompile in the second (Dynamo marks what changed dynamic),
// seconds against milliseconds. With fewer than three steps, the steady-state
// step verify uses.
Ns compiledStepTime(const Trace& run);

// One value's re-run against the recorded compiled run.
CompileBudgetRun judgeCompileBudget(const Trace& recorded, const Trace& measured, double value, int exit_code);

// The fastest sound run whose peak is within `budget`; -1 when none is.
int fastestWithin(const std::vector<CompileBudgetRun>& runs, Bytes budget);

// One `verify --compile-budgets`: the recorded compiled run, a run per
// value, and the eager plan's verification when --plan was given.
struct CompileBudgetSweep {
  Bytes budget = 0;
  int64_t recorded_run = 0;
  std::string model;          // compiledModel(the recorded run)
  double recorded_with = -1;  // compiledWith(the recorded run)
  Bytes recorded_peak = 0;
  Ns recorded_step_ns = 0;  // compiledStepTime
  std::vector<CompileBudgetRun> runs;
  std::string eager_plan;  // the plan file; "" without --plan
  std::optional<Verification> eager;
};

// The eager plan counts when its verification passed and its measured
// peak is within the budget.
bool eagerPlanFits(const Verification& v, Bytes budget);

// What the sweep names fastest within its budget: the eager plan when it
// fits and is faster than every value that fits, else fastestWithin.
struct CompileBudgetAnswer {
  int value = -1;  // index into runs; -1: no value
  bool eager_plan = false;
  bool none() const { return value < 0 && !eager_plan; }
};
CompileBudgetAnswer fastestAnswer(const CompileBudgetSweep& sweep);

// `verify --compile-budgets --json`: field names as toJson(Verification)'s.
nlohmann::json toJson(const CompileBudgetSweep& sweep);

}  // namespace gcprof::advisor
