// gcprof verify: re-run the recorded job with a plan applied and recording
// on, then compare measured against predicted peak and step time, and the
// losses against the baseline's.
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "commands.h"
#include "job.h"
#include "plan/plan_file.h"
#include "recorded_launch.h"
#include "size_parse.h"
#include "trace_input.h"
#include "trace_store.h"
#include "verify/attached_run.h"
#include "verify/job_verification.h"
#include "verify/plan_modules.h"
#include "plan/plan_store.h"
#include "verify/size_argument.h"
#include "verify/verification.h"
#include "verify_command.h"
#include "verify_launch.h"

namespace gcprof::cli {
using advisor::PlanFile;

// Long enough for a healthy re-run with recomputation on a busy machine,
// short enough that a rank waiting forever for a dead peer ends the check.
int defaultTimeout(const RunInfo& baseline) {
  double s = baseline.ended > baseline.started ? (baseline.ended - baseline.started) / 1e9 : 60;
  return static_cast<int>(std::max(120.0, 10 * s));
}

namespace {

std::optional<PlanSize> planSize(const PlanFile& plan, const VerifyArgs& a) {
  const nlohmann::json& doc = plan.json;
  if (!doc.contains("size")) {
    if (!a.size_arg.empty())
      throw StoreError(a.plan + ": --size-arg needs a plan made for a size (advise --what-if NAME --size N)");
    return std::nullopt;
  }
  try {
    const nlohmann::json& s = doc["size"];
    return PlanSize{s.at("name").get<std::string>(), s.at("value").get<int64_t>(),
                    s.at("recorded_size").get<int64_t>()};
  } catch (const nlohmann::json::exception&) {
    throw StoreError(a.plan + ": plan field \"size\" needs name, value and recorded_size");
  }
}

size_t lossCount(const Trace& t) {
  return static_cast<size_t>(std::count_if(t.scalars.begin(), t.scalars.end(),
                                           [](const Scalar& s) { return s.name == "loss"; }));
}

// Progress while the job runs: steps done in the verification run so far
// (only re-runs of this baseline count: another record or verify may be
// writing into the same trace).
class Progress {
 public:
  Progress(std::string trace, int64_t baseline, int64_t after)
      : trace_(std::move(trace)), baseline_(baseline), after_(after) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    stop_ = true;
    thread_.join();
  }

 private:
  void loop() {
    long long shown = -1;
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      try {
        TraceStore s(trace_, TraceStore::Mode::ReadOnly);
        TraceStore::StepProgress p = s.rerunProgress(baseline_, after_);
        if (p.steps != shown && p.steps > 0)
          std::fprintf(stderr, "gcprof verify: %lld step(s) done, peak so far %s\n",
                       static_cast<long long>(p.steps), formatBytes(p.peak).c_str());
        shown = p.steps;
      } catch (const std::exception&) {
        // The job has not created its run yet, or is writing: try again.
      }
    }
  }

  std::string trace_;
  int64_t baseline_;
  int64_t after_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

LaunchResult launchShowingProgress(const LaunchOptions& o, TraceStore& store) {
  Progress progress(o.trace, o.baseline_run, store.maxRunId());
  return launchRecorded(o);
}

namespace {

void printVerification(const advisor::Verification& v) {
  auto mib = [](Bytes b) { return static_cast<double>(b) / (1 << 20); };
  std::printf("verification run %lld of baseline run %lld, plan %lld (%s, %zu segments)\n",
              static_cast<long long>(v.run), static_cast<long long>(v.baseline_run),
              static_cast<long long>(v.plan_id), v.strategy.c_str(), v.checkpoint.size());
  std::printf("  %-10s %14s %14s %14s %10s\n", "", "baseline", "predicted", "measured", "budget");
  std::printf("  %-10s %11.1f MiB %11.1f MiB %11.1f MiB %6.1f MiB\n", "peak", mib(v.baseline_peak),
              mib(v.predicted_peak), mib(v.measured_peak), mib(v.budget));
  std::printf("  %-10s %12.1f ms %12.1f ms %12.1f ms\n", "step time", v.baseline_step_ns / 1e6,
              v.predicted_step_ns / 1e6, v.measured_step_ns / 1e6);
  if (advisor::slowdownMeasured(v))
    std::printf("  %-10s %14s %+13.1f%% %+13.1f%%%s\n", "slowdown", "", advisor::predictedSlowdown(v) * 100,
                advisor::measuredSlowdown(v) * 100,
                v.step_tolerance >= 0 ? "" : "   (not a gate; --step-tolerance 25% makes it one)");
  else
    std::printf("  %-10s %14s %+13.1f%% %14s   (at %s: predicted against its predicted no-checkpoint step "
                "%.1f ms; the baseline ran another size, so no measured slowdown)\n",
                "slowdown", "", advisor::predictedSlowdown(v) * 100, "n/a", v.other_size.c_str(),
                v.predicted_baseline_step_ns / 1e6);
  if (!v.attached.empty()) std::printf("  attached: %s\n", v.attached.c_str());
  for (const advisor::Gate& g : v.gates)
    std::printf("  [%s] %-20s %s\n", g.passed ? "ok" : "FAIL", g.name.c_str(), g.detail.c_str());
  std::printf("verdict: %s\n", v.verdict.c_str());
  if (!v.hint.empty()) std::printf("hint: %s\n", v.hint.c_str());
}

void printRanks(const advisor::JobVerification& v) {
  auto mib = [](Bytes b) { return static_cast<double>(b) / (1 << 20); };
  std::printf("  %5s %5s %5s %12s %14s %14s %12s  %s\n", "rank", "base", "run", "status",
              "predicted", "measured", "step time", "verdict");
  for (const advisor::RankVerification& r : v.ranks)
    std::printf("  %5d %5lld %5lld %12s %10.1f MiB %10.1f MiB %9.1f ms  %s\n", r.rank,
                static_cast<long long>(r.baseline_run), static_cast<long long>(r.run),
                r.status.c_str(), mib(r.result.predicted_peak), mib(r.result.measured_peak),
                r.result.measured_step_ns / 1e6, r.result.verdict.c_str());
}

// torchrun (or any launcher) re-run with the plan on every rank; each rank
// compared with the same rank of the baseline job.
int verifyDistributed(const VerifyArgs& a, TraceStore& store, const Job& job, const PlanFile& plan,
                      int64_t plan_id, LaunchOptions& o, advisor::Verification* out) {
  std::fprintf(stderr, "gcprof verify: re-running job run %lld (%zu ranks) with %s applied on every "
                       "rank, at most %d s\n",
               static_cast<long long>(job.launcher.id), job.ranks.size(), a.plan.c_str(), o.timeout_s);
  LaunchResult r = launchShowingProgress(o, store);
  int64_t launcher = 0;
  for (long long id : r.runs)
    if (store.run(id).job_run == 0) launcher = id;
  if (launcher == 0) throw StoreError(a.trace + ": the verification job created no run");
  Job rerun = jobOf(store, launcher);
  std::vector<Trace> baseline;
  std::vector<std::optional<Trace>> measured;
  for (const RunInfo& rank : job.ranks) {
    baseline.push_back(store.load(rank.id));
    const RunInfo* again = rerun.rank(rank.rank);
    measured.push_back(again ? std::optional<Trace>(store.load(again->id)) : std::nullopt);
  }
  advisor::JobVerification v = advisor::verifyJob(baseline, measured, plan, plan_id, job.launcher.id,
                                                  launcher, r.exit_code, r.timed_out);
  store.saveVerification({0, plan_id, job.launcher.id, launcher, v.summary.verdict, monotonicNs(),
                          toJson(v).dump()});
  if (a.json) {
    std::printf("%s\n", toJson(v).dump(2).c_str());
  } else if (!a.quiet) {
    printVerification(v.summary);
    printRanks(v);
    if (!v.culprit.empty()) std::printf("cause: %s\n", v.culprit.c_str());
  }
  if (out) *out = v.summary;
  return v.summary.verdict == "PASS" ? 0 : 1;
}

std::optional<double> stepTolerance(const VerifyArgs& a) {
  if (a.step_tolerance.empty()) return std::nullopt;
  try {
    return parsePercent(a.step_tolerance);
  } catch (const std::invalid_argument& e) {
    throw StoreError(std::string("--step-tolerance: ") + e.what());
  }
}

}  // namespace

// ReadWrite would create a missing file: an empty trace has no baseline.
void requireWritableTrace(const std::string& trace) {
  if (access(trace.c_str(), R_OK | W_OK) == 0) return;
  int err = errno;
  if (err == ENOENT) throw StoreError(trace + ": no such file; give the trace `gcprof record -o` wrote");
  throw StoreError(trace + ": cannot open for verification (" + std::strerror(err) + "): verify writes "
                   "the re-run into the trace" +
                   (err == EROFS ? "; copy it to a writable disk and verify the copy"
                                 : "; make it writable"));
}

// The recorded command, in its directory, with the environment that shapes
// training (seeds, threads, allocator settings); at another size, with the
// size argument changed. Returns the variables it restores, to be printed.
RestoredEnvironment useRecordedCommand(LaunchOptions& o, const VerifyArgs& a, const RunInfo& baseline,
                                       const std::optional<PlanSize>& size) {
  std::string run = "run " + std::to_string(baseline.id);
  nlohmann::json argv = nlohmann::json::parse(baseline.command, nullptr, false);
  bool words = argv.is_array() && !argv.empty() &&
               std::all_of(argv.begin(), argv.end(), [](const nlohmann::json& w) { return w.is_string(); });
  if (!words)
    throw StoreError(a.trace + ": " + run +
                     " has no recorded command (runs.command is not a list of words); give one after --");
  o.argv = argv.get<std::vector<std::string>>();
  o.cwd = baseline.cwd;
  RestoredEnvironment env = restoredEnvironment(baseline.env, a.trace + " " + run);
  for (const auto& [k, v] : env.restored) o.extra_env.emplace(k, v);
  if (size && size->differs()) {
    if (a.size_arg.empty())
      throw StoreError(a.plan + ": the plan is for " + size->name + "=" + std::to_string(size->value) +
                       " but " + run + " ran " + size->name + "=" + std::to_string(size->recorded) +
                       "; say how the job takes the size with --size-arg \"--" + size->name +
                       " {size}\", or give the command after --");
    o.argv = advisor::withSize(o.argv, a.size_arg, size->recorded, size->value);
  }
  return env;
}

namespace {

// The verification of one re-run against its baseline. An attached baseline
// (some steps from the middle of the job) is lined up with the re-run first,
// its steps renumbered when they count from attach; at another size, losses
// and step times are compared at that size only.
advisor::Verification judgeRerun(Trace& baseline_trace, const Trace& measured, const PlanFile& plan,
                                 int64_t plan_id, int exit_code, std::optional<double> step_tolerance,
                                 const std::optional<PlanSize>& size) {
  advisor::AttachedBaseline attached = advisor::attachedBaseline(baseline_trace);
  std::string alignment = attached.attached ? advisor::alignAttached(baseline_trace, measured, attached) : "";
  advisor::Verification v =
      advisor::verify(baseline_trace, measured, plan, plan_id, exit_code, step_tolerance);
  if (attached.attached) advisor::judgeAttached(v, plan, baseline_trace, measured, alignment);
  if (size && size->differs()) {
    advisor::compareLossesAtSize(v, measured, size->value, lossCount(baseline_trace));
    advisor::compareStepsAtSize(v, plan, size->name, size->value, size->recorded);
  }
  return v;
}

}  // namespace

int64_t rerunOf(TraceStore& store, const RunInfo& baseline, const LaunchResult& r) {
  if (r.root_run == 0) return 0;
  bool baseline_is_root = baseline.job_run == 0 || baseline.job_run == baseline.id;
  if (baseline_is_root) return store.run(r.root_run).baseline_run == baseline.id ? r.root_run : 0;
  return store.trainingRun(r.root_run, baseline.id);
}

int runVerify(const VerifyArgs& a, advisor::Verification* out) {
  std::optional<double> step_tolerance = stepTolerance(a);
  int flush_wait_ms = parseFlushWaitMs(a.flush_wait);
  PlanFile plan = advisor::readPlanFile(a.plan);
  requireWritableTrace(a.trace);
  TraceStore store(a.trace, TraceStore::Mode::ReadWrite);
  int64_t baseline_id = chooseRun(store, plan.trace_run);
  RunInfo baseline = store.run(baseline_id);
  Job baseline_job = jobOf(store, baseline_id);
  // A job's units are its ranks' (the launcher runs no model).
  Trace baseline_trace = store.load(baseline_job.distributed() && baseline_job.launcher.id == baseline_id
                                        ? baseline_job.ranks.front().id
                                        : baseline_id);
  advisor::checkPlanModulesExist(plan, baseline_trace, a.plan);
  std::optional<PlanSize> size = planSize(plan, a);

  LaunchOptions o;
  o.trace = absolutePath(a.trace);
  o.backend = a.backend != "auto" ? a.backend : (baseline.backend == "cuda" ? "cuda" : "auto");
  o.min_bytes = baseline.min_bytes > 0 ? baseline.min_bytes : o.min_bytes;
  o.baseline_run = baseline_id;
  o.extra_env["GCPROF_PLAN"] = absolutePath(a.plan);
  RestoredEnvironment env;
  if (!a.command.empty())
    o.argv = a.command;
  else
    env = useRecordedCommand(o, a, baseline, size);
  o.timeout_s = a.timeout_s >= 0 ? a.timeout_s : defaultTimeout(baseline);
  o.flush_wait_ms = flush_wait_ms;
  o.job_stdout_to_stderr = a.json || a.quiet;
  Job job = jobOf(store, baseline_id);
  // One rank's command alone would wait for a rendezvous that never comes.
  if (job.distributed() && job.launcher.id != baseline_id && baseline.rank >= 0 && a.command.empty())
    throw StoreError(a.plan + ": made for " + rankName(baseline) + " alone, but a rank cannot run without "
                     "its job; advise on the job (gcprof advise " + a.trace + " --run " +
                     std::to_string(job.launcher.id) + " ...) or give the command to run after --");
  printLaunch(stderr, o, a.command.empty() ? "run " + std::to_string(baseline_id) + " of " + a.trace : "after --",
              env);
  if (a.dry_run) return 0;
  int64_t plan_id = advisor::planRow(store, plan, monotonicNs());
  o.plan_id = plan_id;
  o.name = "verify plan " + std::to_string(plan_id);
  if (size && size->differs()) o.name += " at " + size->name + "=" + std::to_string(size->value);
  if (job.distributed() && job.launcher.id == baseline_id)
    return verifyDistributed(a, store, job, plan, plan_id, o, out);
  std::fprintf(stderr, "gcprof verify: re-running run %lld with %s applied\n",
               static_cast<long long>(baseline_id), a.plan.c_str());
  LaunchResult r = launchShowingProgress(o, store);
  int64_t run_id = rerunOf(store, baseline, r);
  if (run_id == 0) throw StoreError(a.trace + ": the verification job created no run");
  Trace measured = store.load(run_id);
  advisor::Verification v =
      judgeRerun(baseline_trace, measured, plan, plan_id, r.exit_code, step_tolerance, size);
  store.saveVerification({0, plan_id, baseline_id, run_id, v.verdict, monotonicNs(), toJson(v).dump()});
  if (a.json)
    std::printf("%s\n", toJson(v).dump(2).c_str());
  else if (!a.quiet)
    printVerification(v);
  if (out) *out = v;
  return v.verdict == "PASS" ? 0 : 1;
}


void addVerify(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "Re-run the recorded job with a plan applied (GCPROF_PLAN) and recording on, then compare\n"
      "measured vs predicted peak and step time, and losses vs the baseline.\n"
      "Exit 0 when every gate passes, 1 when one fails, 2 for bad input.");
  sub->add_option("trace", args->trace, "Trace holding the baseline run")->required();
  sub->add_option("--plan", args->plan,
                  "Plan file written by `gcprof advise` (with --compile-budgets: an eager plan, from a\n"
                  "recording with TORCH_COMPILE_DISABLE=1, verified and compared with the values)");
  sub->add_option("--backend", args->backend, "auto | host | cuda (default: the baseline's)")
      ->check(CLI::IsMember({"auto", "host", "cuda"}));
  sub->add_option("--step-tolerance", args->step_tolerance,
                  "Also gate on step time: measured within this % of predicted (e.g. 25%); off by "
                  "default because a re-run's time on a shared machine is noise");
  sub->add_option("--timeout", args->timeout_s,
                  "End the re-run (and every process it started) after this many seconds "
                  "(default: 10x the baseline's duration, at least 120)");
  sub->add_option("--flush-wait", args->flush_wait,
                  "Seconds a process of the re-run that is told to stop (by --timeout, SIGTERM, "
                  "SIGINT) waits for its events to reach the trace before it dies (0..3600), as "
                  "for record")
      ->capture_default_str();
  sub->add_option("--size-arg", args->size_arg,
                  "For a plan made for a size (advise --what-if --size N): how the job takes it, e.g.\n"
                  "\"--batch {size}\"; the recorded command's argument is changed to the plan's size");
  sub->add_flag("--dry-run", args->dry_run,
                "Print the command, its directory and the environment restored from the trace, "
                "and run nothing");
  sub->add_option("--compile-budgets", args->compile_budgets,
                  "For a job that trains under torch.compile: re-run the newest such recording once per\n"
                  "activation_memory_budget value (e.g. 0.2,0.4,0.6,0.8; set by the python shim), and\n"
                  "say which values fit --budget and which is fastest. The peak is not monotonic in\n"
                  "the value, so each value is run. Losses are compared to 1e-3 (another value fuses\n"
                  "other kernels). Exit 0 when a value (or the --plan) fits, 1 when none does");
  sub->add_option("--budget", args->budget,
                  "With --compile-budgets: the memory the runs must fit (300MiB, or 60% of the\n"
                  "recorded peak)");
  sub->add_flag("--json", args->json,
                 "Print the result as one JSON object (the verification as `gcprof report --format json`\n"
                 "writes it; with --compile-budgets each value's run, the eager plan's and the fastest);\n"
                 "the job's own output goes to stderr");
  sub->add_option("command", args->command, "Command to run instead of the recorded one (after --)");
  sub->callback([args, &exit_code] {
    if (!args->compile_budgets.empty()) {
      exit_code = runCompileBudgets(*args);
      return;
    }
    if (args->plan.empty()) throw CLI::RequiredError("--plan (or --compile-budgets for a torch.compile job)");
    if (!args->budget.empty()) throw CLI::ValidationError("--budget", "goes with --compile-budgets");
    exit_code = runVerify(*args);
  });
}

}  // namespace gcprof::cli
