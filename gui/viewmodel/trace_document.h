// An open trace file as the GUI sees it: its runs, the picked run ready to
// draw, the plans made from it and the overlays (a plan's predicted curve, a
// verification run's measured one). Nothing here throws: every failure comes
// back as a message for the user, so a damaged file can never crash the GUI.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan_view.h"
#include "run_view.h"
#include "what_fits.h"
#include "trace_store.h"

namespace gcprof::view {

class TraceDocument {
 public:
  // Opens `path` read-only and loads its newest baseline run (or `run` when
  // non-zero). nullptr with `error` set when the file is not a readable trace.
  // `progress` is told how many rows of the run were read (trace_opening.h).
  static std::unique_ptr<TraceDocument> open(const std::string& path, int64_t run,
                                             std::string* error,
                                             const TraceStore::LoadProgress& progress = {});

  // The run open() shows for `run` (0: the newest baseline run; a torchrun
  // launcher: its first rank); 0 when the file has no runs.
  static int64_t pickRun(TraceStore& store, const std::vector<RunInfo>& runs, int64_t run);
  // Whether `plan` was made for `run` (a job's plans are made for every rank).
  static bool planOfRun(const PlanRecord& plan, const RunInfo& run);

  // A run already in memory, without a file (benchmarks, tests, reports):
  // no other runs, plans or verifications.
  static std::unique_ptr<TraceDocument> fromTrace(Trace trace, const std::string& label);

  const std::string& path() const { return path_; }
  const std::vector<RunInfo>& runs() const { return runs_; }
  const RunView& run() const { return *run_; }
  // Loads another run (any run of the file). False with `error` on failure;
  // the current run stays.
  bool selectRun(int64_t id, std::string* error, const TraceStore::LoadProgress& progress = {});

  // Plans made from the current run, oldest first. Opening a run selects the
  // plan of its newest verification, the one `gcprof report` shows, else
  // the newest plan; openedPlanNote() says which of the two it was.
  const std::vector<PlanView>& plans() const { return plans_; }
  const std::string& openedPlanNote() const { return opened_plan_note_; }
  const PlanView* selectedPlan() const;
  // 0 = none. Picks the newest verification run of the plan along with it.
  void selectPlan(int64_t id);
  // Runs that re-ran the current one (RunInfo::baseline_run), oldest first.
  std::vector<RunInfo> verificationRuns() const;
  // The ranks of the job the current run belongs to (torchrun, DDP, FSDP),
  // for the rank picker; empty for a single-process run.
  std::vector<RunInfo> jobRanks() const;
  int64_t selectedVerification() const { return verification_run_; }
  // 0 = none. False with `error` when that run cannot be loaded.
  bool selectVerification(int64_t run, std::string* error);

  const Overlay* predicted() const { return predicted_ ? &*predicted_ : nullptr; }
  const Overlay* verified() const { return verified_ ? &*verified_ : nullptr; }
  // Why there is no predicted curve for the selected plan ("" when there is).
  const std::string& predictedNote() const { return predicted_note_; }
  // The verdict recorded for the selected verification run, "" if none.
  std::string verdict() const;

  // What fits (docs/plan.md): the selected plan's what-if when it is a sized
  // plan, else the one computeWhatFits made; nullptr when neither.
  const WhatFits* whatFits() const;
  // The file's runs of one job at different sizes (`record --name batch=4`),
  // as (run, size) by size; empty when fewer than two. `sizeName()`: batch, seq.
  const std::vector<std::pair<int64_t, int64_t>>& sizedRuns() const { return sized_runs_; }
  const std::string& sizeName() const { return size_name_; }
  // The advisor's what-if for sizedRuns() at `budget_percent` of the largest
  // recorded peak. False with `error` set (the advisor's refusal, a run that
  // cannot be loaded); the previous answer is then dropped.
  bool computeWhatFits(double budget_percent, std::string* error);

 private:
  TraceDocument() = default;
  void loadPlans();
  void selectOpeningPlan();
  void refreshPredicted();

  std::string path_;
  std::unique_ptr<TraceStore> store_;
  std::vector<RunInfo> runs_;
  std::unique_ptr<RunView> run_;
  std::vector<PlanView> plans_;
  std::vector<VerificationRecord> verifications_;
  int64_t plan_id_ = 0;
  std::string opened_plan_note_;
  int64_t verification_run_ = 0;
  std::optional<Overlay> predicted_;
  std::optional<Overlay> verified_;
  std::string predicted_note_;
  std::vector<std::pair<int64_t, int64_t>> sized_runs_;
  std::string size_name_;
  std::optional<WhatFits> plan_what_fits_;      // the selected plan's
  std::optional<WhatFits> computed_what_fits_;  // computeWhatFits'
};

}  // namespace gcprof::view
