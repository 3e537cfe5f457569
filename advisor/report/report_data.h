// Everything a report shows about one verification, gathered once from the
// trace: the lead's Verification (verify/verification.h), the plan, and the
// three memory curves of the chart — recorded baseline, predicted (the plan
// replayed on the baseline) and measured (the verification run).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memory/memory_curve.h"
#include "plan/plan_file.h"
#include "trace_store.h"
#include "verify/verification.h"

namespace gcprof::advisor {

// Charts put every run on one axis measured in steps (x = 1.5 is the middle
// of step 1): runs differ in speed, and recomputation stretches steps, so
// aligning them by step is what lets a person compare the curves.
struct ChartPoint {
  double x = 0;
  Bytes live = 0;
};

struct UnitBand {
  std::string unit;
  double x0 = 0, x1 = 0;  // on the step axis
  bool forward = true;
  bool checkpointed = false;
};

// Maps a run's times onto the step axis: inside step k, k + the fraction of
// the step elapsed; before the first step 0, between steps the next step's
// start, after the last step the number of steps. Without steps: the
// fraction of the run.
class StepAxis {
 public:
  StepAxis(std::vector<std::pair<Ns, Ns>> steps, Ns run_start, Ns run_end);
  double operator()(Ns t) const;
  size_t steps() const { return steps_.size(); }

 private:
  std::vector<std::pair<Ns, Ns>> steps_;
  Ns run_start_, run_end_;
};

struct ReportData {
  std::string trace;
  int64_t verification_id = 0;
  Verification v;
  std::optional<PlanFile> plan;
  std::string memory;                    // "host", "device tensors"
  std::vector<ChartPoint> baseline, predicted, measured;
  size_t steps = 0;                      // length of the step axis (0: fraction of the run)
  std::vector<UnitBand> bands;
  // A multi-process job: one entry per rank as `verify` stored it
  // (job_verification.h), and the rank that ended a failed job. The chart
  // shows the rank with the highest measured peak.
  nlohmann::json ranks = nlohmann::json::array();
  std::string culprit;
  int chart_rank = -1;
  // The chart's series names. A plan made for another size than the recorded
  // one (advise --what-if --size N) predicts a peak at that size, not a curve:
  // its predicted series is then that peak, level, and `sized_note` says so.
  std::string baseline_label = "baseline (recorded)";
  std::string predicted_label = "predicted (plan replayed)";
  std::string sized_note;
};

// Rows of the per-rank table: rank, runs, status, predicted/measured peak, step, verdict.
struct RankRow {
  int rank = -1;
  int64_t baseline_run = 0, run = 0;
  std::string status, verdict;
  Bytes predicted_peak = 0, measured_peak = 0;
  Ns measured_step_ns = 0;
};
std::vector<RankRow> rankRows(const ReportData& r);

// Per checkpointed segment of the verified plan, the operator calls a
// selective segment keeps (empty for whole-module segments or without the plan).
std::vector<std::vector<std::string>> saveLists(const ReportData& r);

// The newest verification, or `verification_id`. Throws AdviceError when the
// trace has none ("run gcprof verify first") or the id does not exist.
ReportData loadReport(TraceStore& store, int64_t verification_id, size_t max_points = 1200);

// The report as JSON: the stored comparison plus the trace and id (docs/report.md).
nlohmann::json reportJson(const ReportData& r);

std::string markdownReport(const ReportData& r);
std::string junitReport(const ReportData& r);
std::string htmlReport(const ReportData& r);

}  // namespace gcprof::advisor
