// `gcprof verify`: its options, and what its two ways of re-running a job
// share: a plan applied (verify_command.cpp) and torch.compile's
// activation_memory_budget values (compile_budgets_command.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "recorded_launch.h"
#include "trace_store.h"
#include "verify/verification.h"
#include "verify_launch.h"

namespace gcprof::cli {

struct VerifyArgs {
  std::string trace;
  std::string plan;
  std::string backend = "auto";
  std::string step_tolerance;  // off unless given
  int timeout_s = -1;  // -1: from the baseline's duration
  std::string size_arg;  // "--batch {size}": how the job takes the plan's size
  std::string flush_wait = "5";  // as `record --flush-wait`
  bool dry_run = false;  // say what would run, run nothing
  std::string compile_budgets;  // "0.2,0.5": one re-run per activation_memory_budget value
  std::string budget;           // with compile_budgets: the memory budget runs must fit
  bool json = false;   // the result as one JSON object on stdout; the job's own output to stderr
  bool quiet = false;  // print no result (the caller reports it); the job's output to stderr
  std::vector<std::string> command;
};

// A what-if plan (advise --what-if --size N) is for another size than the
// run it was made on; the verification runs that size.
struct PlanSize {
  std::string name;
  int64_t value = 0, recorded = 0;
  bool differs() const { return value != recorded; }
};

// Long enough for a healthy re-run with recomputation on a busy machine,
// short enough that a rank waiting forever for a dead peer ends the check.
int defaultTimeout(const RunInfo& baseline);

// ReadWrite would create a missing file: an empty trace has no baseline.
void requireWritableTrace(const std::string& trace);

// The recorded command, in its directory, with the environment that shapes
// training (seeds, threads, allocator settings); at another size, with the
// size argument changed. Returns the variables it restores, to be printed.
RestoredEnvironment useRecordedCommand(LaunchOptions& o, const VerifyArgs& a, const RunInfo& baseline,
                                       const std::optional<PlanSize>& size);

// launchRecorded, saying on stderr how far the re-run of o.baseline_run got
// (its steps and peak so far) while it runs.
LaunchResult launchShowingProgress(const LaunchOptions& o, TraceStore& store);

// The re-run's counterpart of `baseline` among the runs launchRecorded made:
// the process verify started when the baseline is its job's own, else the
// re-run's process that trained (TraceStore::trainingRun); 0 when none.
// Never merely the newest run: a DataLoader worker or a data-prep subprocess
// of the re-run makes runs after its training process's.
int64_t rerunOf(TraceStore& store, const RunInfo& baseline, const LaunchResult& r);

// The verification of a plan; `out`, when given, receives it (a job's
// summary for a torchrun job). Returns the exit code.
int runVerify(const VerifyArgs& a, advisor::Verification* out = nullptr);

// `verify --compile-budgets`: the recorded compiled job re-run once per
// activation_memory_budget value; with --plan, the eager plan verified too,
// and the fastest of all that fit named. Returns the exit code.
int runCompileBudgets(const VerifyArgs& a);

}  // namespace gcprof::cli
