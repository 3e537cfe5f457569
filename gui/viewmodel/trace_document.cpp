#include "trace_document.h"

#include <algorithm>

#include "predicted_curve.h"

namespace gcprof::view {
namespace {

// The launcher run a rank belongs to, or the run itself.
int64_t jobOf(const RunInfo& r) { return r.job_run > 0 ? r.job_run : r.id; }

// First step start, else the first allocation: where runs of one command line up.
Ns anchorTime(const Trace& t, const StackedMemory& m) {
  if (!t.steps.empty()) return t.steps.front().start;
  return m.empty() ? t.run.started : m.firstTime();
}

}  // namespace

std::unique_ptr<TraceDocument> TraceDocument::open(const std::string& path, int64_t run,
                                                   std::string* error,
                                                   const TraceStore::LoadProgress& progress) {
  std::unique_ptr<TraceDocument> doc(new TraceDocument());
  doc->path_ = path;
  try {
    doc->store_ = std::make_unique<TraceStore>(path, TraceStore::Mode::ReadOnly);
    doc->runs_ = doc->store_->runs();
    doc->sized_runs_ = sizedRunsOf(doc->runs_, &doc->size_name_);
    if (doc->runs_.empty()) {
      *error = path + ": the trace holds no runs yet (record one with `gcprof record`)";
      return nullptr;
    }
    run = pickRun(*doc->store_, doc->runs_, run);
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
  if (!doc->selectRun(run, error, progress)) return nullptr;
  return doc;
}

int64_t TraceDocument::pickRun(TraceStore& store, const std::vector<RunInfo>& runs, int64_t run) {
  if (runs.empty()) return 0;
  if (run == 0) run = store.lastRun();
  if (run == 0) run = runs.back().id;
  // A torchrun job: its launcher trains nothing; open its first rank.
  for (const RunInfo& r : runs)
    if (r.job_run == run && r.rank >= 0 && r.baseline_run == 0) return r.id;
  return run;
}

bool TraceDocument::planOfRun(const PlanRecord& plan, const RunInfo& run) {
  return plan.run == run.id || (run.rank >= 0 && plan.run == jobOf(run));
}

std::unique_ptr<TraceDocument> TraceDocument::fromTrace(Trace trace, const std::string& label) {
  std::unique_ptr<TraceDocument> doc(new TraceDocument());
  doc->path_ = label;
  doc->runs_ = {trace.run};
  doc->run_ = std::make_unique<RunView>(std::move(trace), std::vector<std::string>{});
  return doc;
}

bool TraceDocument::selectRun(int64_t id, std::string* error, const TraceStore::LoadProgress& progress) {
  if (!store_) {
    *error = path_ + ": not a file; it holds only the run it was made from";
    return false;
  }
  try {
    // Units come from the newest plan of the run when there is one, so the
    // colours match what the advisor reasoned about.
    std::vector<PlanRecord> records = store_->plans();
    std::vector<std::string> units;
    int64_t job = id;
    for (const RunInfo& r : runs_)
      if (r.id == id) job = jobOf(r);
    for (const PlanRecord& r : records) {
      if (r.run != id && r.run != job) continue;  // a job's plans are made for every rank
      PlanView p = PlanView::fromRecord(r);
      if (p.error.empty() && !p.units.empty()) units = p.units;
    }
    auto view = std::make_unique<RunView>(store_->load(id, progress), units);
    run_ = std::move(view);
    verifications_ = store_->verifications();
  } catch (const std::exception& e) {
    *error = path_ + ": cannot load run " + std::to_string(id) + ": " + e.what();
    return false;
  }
  predicted_.reset();
  verified_.reset();
  verification_run_ = 0;
  plan_id_ = 0;
  loadPlans();
  selectOpeningPlan();
  return true;
}

// The report shows the newest verification and its plan; the GUI opens on
// the same one, so that the two never disagree about "the plan". Without
// a verification of this run, the newest plan.
void TraceDocument::selectOpeningPlan() {
  opened_plan_note_.clear();
  if (plans_.empty()) return;
  std::vector<RunInfo> reruns = verificationRuns();
  for (auto v = verifications_.rbegin(); v != verifications_.rend(); ++v) {
    bool mine = std::any_of(reruns.begin(), reruns.end(), [&](const RunInfo& r) { return r.id == v->run; });
    bool listed = std::any_of(plans_.begin(), plans_.end(), [&](const PlanView& p) { return p.id == v->plan; });
    if (!mine || !listed) continue;
    selectPlan(v->plan);
    opened_plan_note_ = "plan " + std::to_string(v->plan) + ": the newest verified (run " +
                        std::to_string(v->run) + ", " + v->verdict + "), as gcprof report shows";
    if (v->plan != plans_.back().id)
      opened_plan_note_ += "; newer, not verified: plan " + std::to_string(plans_.back().id);
    return;
  }
  selectPlan(plans_.back().id);
  opened_plan_note_ = "plan " + std::to_string(plans_.back().id) + ": the newest, not verified";
}

void TraceDocument::loadPlans() {
  plans_.clear();
  if (!store_) return;
  try {
    const RunInfo& current = run_->trace.run;
    for (const PlanRecord& r : store_->plans())
      if (planOfRun(r, current)) plans_.push_back(PlanView::fromRecord(r));
  } catch (const std::exception&) {
    // A damaged plans table leaves the timeline usable; the list stays empty.
  }
}

const PlanView* TraceDocument::selectedPlan() const {
  for (const PlanView& p : plans_)
    if (p.id == plan_id_) return &p;
  return nullptr;
}

void TraceDocument::selectPlan(int64_t id) {
  plan_id_ = id;
  // Plans of one run may name different units (advise --units): the units
  // table and the series are those of the plan shown, not of the newest one.
  const PlanView* plan = selectedPlan();
  if (plan && plan->error.empty() && !plan->units.empty()) {
    std::vector<std::string> shown;
    for (const UnitStats& u : run_->units) shown.push_back(u.name);
    if (shown != plan->units) {
      Trace trace = std::move(run_->trace);
      run_ = std::make_unique<RunView>(std::move(trace), plan->units);
    }
  }
  applyPlan(run_->units, selectedPlan());
  refreshPredicted();
  plan_what_fits_.reset();
  std::string no_what_if;
  if (plan && plan->error.empty()) plan_what_fits_ = whatFitsFromJson(plan->json, &no_what_if);
  if (plan_what_fits_) plan_what_fits_->source = "plan " + std::to_string(plan->id);
  int64_t newest = 0;
  for (const RunInfo& r : verificationRuns())
    if (id != 0 && r.plan_id == id) newest = r.id;
  std::string ignored;
  selectVerification(newest, &ignored);
}

void TraceDocument::refreshPredicted() {
  predicted_.reset();
  predicted_note_.clear();
  const PlanView* plan = selectedPlan();
  if (!plan) return;
  if (!plan->error.empty()) { predicted_note_ = plan->error; return; }
  std::optional<PredictedCurve> predicted = predictedCurve(run_->trace, *plan, &predicted_note_);
  if (!predicted) return;
  Overlay o;
  o.label = "predicted (" + plan->strategy + ")";
  o.peak = predicted->curve.peak();
  o.curve = std::move(predicted->curve);
  // Recorded steps are stretched by recomputation on the simulated timeline;
  // put each back on its baseline step, as for verification runs.
  o.warp = TimeWarp(predicted->steps, run_->trace.steps, 0);
  o.colour = palette::kPredicted;
  predicted_ = std::move(o);
}

std::vector<RunInfo> TraceDocument::verificationRuns() const {
  std::vector<RunInfo> out;
  const RunInfo& current = run_->trace.run;
  for (const RunInfo& r : runs_) {
    if (r.baseline_run != 0 && r.baseline_run == current.id) out.push_back(r);
    // A rank's re-runs are the same rank of its job's verification jobs.
    else if (current.rank >= 0 && r.rank == current.rank && r.baseline_run == jobOf(current) &&
             r.baseline_run != 0)
      out.push_back(r);
  }
  return out;
}

std::vector<RunInfo> TraceDocument::jobRanks() const {
  std::vector<RunInfo> out;
  const RunInfo& current = run_->trace.run;
  int64_t job = jobOf(current);
  for (const RunInfo& r : runs_)
    if (r.job_run == job && r.rank >= 0 && r.baseline_run == current.baseline_run) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const RunInfo& a, const RunInfo& b) { return a.rank < b.rank; });
  return out;
}

bool TraceDocument::selectVerification(int64_t id, std::string* error) {
  verified_.reset();
  verification_run_ = 0;
  if (id == 0) return true;
  if (!store_) {
    *error = path_ + ": not a file; it has no verification runs";
    return false;
  }
  try {
    Trace t = store_->load(id);
    Overlay o;
    o.curve = totalCurve(t);
    o.warp = TimeWarp(t.steps, run_->trace.steps,
                      anchorTime(run_->trace, run_->memory) - anchorTime(t, o.curve));
    o.label = "measured (run " + std::to_string(id) + ")";
    o.colour = palette::kVerified;
    o.peak = o.curve.peak();
    verified_ = std::move(o);
    verification_run_ = id;
    return true;
  } catch (const std::exception& e) {
    *error = path_ + ": cannot load verification run " + std::to_string(id) + ": " + e.what();
    return false;
  }
}

std::string TraceDocument::verdict() const {
  for (auto it = verifications_.rbegin(); it != verifications_.rend(); ++it)
    if (it->run == verification_run_) return it->verdict;
  return "";
}

const WhatFits* TraceDocument::whatFits() const {
  if (plan_what_fits_) return &*plan_what_fits_;
  return computed_what_fits_ ? &*computed_what_fits_ : nullptr;
}

bool TraceDocument::computeWhatFits(double budget_percent, std::string* error) {
  computed_what_fits_.reset();
  if (sized_runs_.size() < 2 || !store_) {
    *error = path_ + ": what fits needs two or more runs of the job named by their size "
             "(`gcprof record --name batch=2 ...`)";
    return false;
  }
  std::vector<Trace> traces;
  try {
    for (const auto& [run, size] : sized_runs_) traces.push_back(store_->load(run));
  } catch (const std::exception& e) {
    *error = path_ + ": cannot load a sized run: " + e.what();
    return false;
  }
  std::vector<const Trace*> pointers;
  for (const Trace& t : traces) pointers.push_back(&t);
  computed_what_fits_ = view::computeWhatFits(sized_runs_, pointers, size_name_, budget_percent, error);
  return computed_what_fits_.has_value();
}

}  // namespace gcprof::view
