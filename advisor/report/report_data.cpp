#include "report/report_data.h"

#include <algorithm>
#include <climits>

#include "advice_error.h"
#include "chain/chain_peak.h"
#include "plan/plan_simulation.h"
#include "saturating.h"
#include "utf8_text.h"

namespace gcprof::advisor {
namespace {

std::vector<std::pair<Ns, Ns>> stepsOf(const Trace& t) {
  std::vector<std::pair<Ns, Ns>> out;
  for (const Step& s : t.steps) out.push_back({s.start, s.end});
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ChartPoint> onAxis(const std::vector<MemoryPoint>& pts, const StepAxis& axis,
                               size_t max_points) {
  std::vector<ChartPoint> out;
  out.reserve(std::min(pts.size(), max_points + 1));
  for (const MemoryPoint& p : downsample(pts, max_points)) out.push_back({axis(p.time), p.live});
  return out;
}

}  // namespace

StepAxis::StepAxis(std::vector<std::pair<Ns, Ns>> steps, Ns run_start, Ns run_end)
    : steps_(std::move(steps)), run_start_(run_start), run_end_(std::max(run_end, sat::add(run_start, 1))) {}

double StepAxis::operator()(Ns t) const {
  if (steps_.empty())
    return static_cast<double>(sat::sub(t, run_start_)) / static_cast<double>(sat::sub(run_end_, run_start_));
  for (size_t k = 0; k < steps_.size(); ++k) {
    auto [s, e] = steps_[k];
    if (t < s) return static_cast<double>(k);
    if (t <= e) return static_cast<double>(k) + static_cast<double>(sat::sub(t, s)) / static_cast<double>(std::max<Ns>(1, sat::sub(e, s)));
  }
  return static_cast<double>(steps_.size());
}

std::vector<std::vector<std::string>> saveLists(const ReportData& r) {
  std::vector<std::vector<std::string>> out(r.v.checkpoint.size());
  if (!r.plan || r.plan->checkpoint != r.v.checkpoint) return out;
  for (size_t i = 0; i < out.size() && i < r.plan->policy.size(); ++i)
    if (r.plan->policy[i] == "selective") out[i] = r.plan->save[i];
  return out;
}

namespace {

// The verification asked for by id; the newest when 0.
const VerificationRecord& verificationOf(const std::vector<VerificationRecord>& all, const std::string& trace,
                                         int64_t verification_id) {
  if (all.empty())
    throw AdviceError(trace + ": holds no verification; run `gcprof verify " + trace + " --plan plan.json` first");
  if (verification_id <= 0) return all.back();
  for (const VerificationRecord& v : all)
    if (v.id == verification_id) return v;
  throw AdviceError(trace + ": no verification " + std::to_string(verification_id) + " (it has " +
                    std::to_string(all.size()) + ")");
}

// A sized plan (docs/plan.md "What fits"): the baseline is the largest
// recorded run and the measured run is at the plan's size, where replaying
// the plan on the baseline would show the recorded size's memory. The
// prediction at the plan's size is its peak. False for any other plan.
bool chartAtPlanSize(ReportData& r) {
  const nlohmann::json size = r.plan ? r.plan->json.value("size", nlohmann::json::object()) : nlohmann::json::object();
  const bool sized = size.is_object() && size.contains("value") && size.value("value", int64_t{0}) !=
                                                                      size.value("recorded_size", int64_t{0});
  if (!sized) return false;
  std::string name = size.value("name", std::string("size"));
  std::string at = name + "=" + std::to_string(size.value("value", int64_t{0}));
  std::string recorded = name + "=" + std::to_string(size.value("recorded_size", int64_t{0}));
  r.baseline_label = "baseline (recorded at " + recorded + ")";
  r.predicted_label = "predicted peak at " + at + " (what-if)";
  r.sized_note = "The plan is for " + at + " and the baseline was recorded at " + recorded +
                 ": the predicted line is the what-if's peak at " + at +
                 " (a prediction for another size is a peak, not a curve); the measured curve is the re-run at " + at + ".";
  double end = r.steps > 0 ? static_cast<double>(r.steps) : 1.0;
  r.predicted = {{0.0, r.plan->predicted_peak}, {end, r.plan->predicted_peak}};
  return true;
}

// The plan replayed on the baseline: its predicted curve (unless `sized`)
// and the units' forward and backward bands, checkpointed or not. A plan
// that does not replay on this trace leaves the report without them.
void chartPlanReplay(ReportData& r, const Trace& base, bool sized, size_t max_points) {
  if (!r.plan || r.plan->units.empty()) return;
  SimulationOptions o;
  o.want_curve = true;
  PlanSimulation run;
  try {
    run = simulatePlan(base, *r.plan, o);
  } catch (const AdviceError&) {
    return;
  }
  auto [b0, b1] = runSpan(base);
  const std::vector<std::pair<Ns, Ns>> base_steps = stepsOf(base);
  StepAxis base_axis(base_steps, b0, b1);
  std::vector<std::pair<Ns, Ns>> bounds = run.sim.step_bounds;
  std::sort(bounds.begin(), bounds.end());
  // A run without step markers is one step: nothing to shift by.
  Ns shift = bounds.empty() || base_steps.empty() ? 0 : sat::sub(bounds.back().second, base_steps.back().second);
  StepAxis axis(bounds.size() == base_steps.size() ? bounds : base_steps, b0, sat::add(b1, shift));
  if (!sized) r.predicted = onAxis(run.sim.curve, axis, max_points);
  std::vector<bool> checkpointed(r.plan->units.size(), false);
  for (const Segment& s : run.segments)
    for (int k = s.first; k <= s.last; ++k) checkpointed[k] = true;
  for (const StepLayout& st : run.layout.steps) {
    if (!st.complete) continue;
    for (size_t k = 0; k < st.units.size(); ++k) {
      const UnitWindow& w = st.units[k];
      const std::string& name = r.plan->units[k];
      r.bands.push_back({name, base_axis(w.fwd_start), base_axis(w.fwd_end), true, checkpointed[k]});
      r.bands.push_back({name, base_axis(w.bwd_start), base_axis(w.bwd_end), false, checkpointed[k]});
    }
  }
}

}  // namespace

ReportData loadReport(TraceStore& store, int64_t verification_id, size_t max_points) {
  std::vector<VerificationRecord> all = store.verifications();
  const VerificationRecord* rec = &verificationOf(all, store.path(), verification_id);
  ReportData r;
  r.trace = validUtf8(store.path());  // a path is bytes; every report format is UTF-8
  r.verification_id = rec->id;
  nlohmann::json doc = nlohmann::json::parse(rec->json, nullptr, false);
  auto damaged = [&](const std::string& what) {
    return AdviceError(store.path() + ": verification " + std::to_string(rec->id) + " is damaged (" + what +
                       "); run gcprof verify again");
  };
  try {
    if (doc.is_discarded()) throw VerificationRowError("its JSON does not parse");
    r.v = fromJson(doc);
  } catch (const VerificationRowError& e) {
    throw damaged(e.what());
  }
  for (const PlanRecord& p : store.plans()) {
    if (p.id != r.v.plan_id) continue;
    try {
      r.plan = parsePlanText(p.json, store.path() + " plan " + std::to_string(p.id));
    } catch (const AdviceError&) {
      // A report without the predicted curve is still a report.
    }
  }

  // A job's memory is its ranks': chart the one with the highest measured peak.
  int64_t base_run = rec->baseline_run, measured_run = rec->run;
  if (doc.contains("ranks") && doc["ranks"].is_array() && !doc["ranks"].empty()) try {
    r.ranks = doc["ranks"];
    r.culprit = doc.value("culprit", std::string());
    const nlohmann::json* worst = nullptr;
    for (const auto& k : r.ranks)
      if (!worst || k["measured"].value("peak_bytes", Bytes{0}) > (*worst)["measured"].value("peak_bytes", Bytes{0}))
        worst = &k;
    base_run = (*worst)["baseline"].value("run", base_run);
    measured_run = (*worst)["measured"].value("run", int64_t{0});
    r.chart_rank = worst->value("rank", -1);
  } catch (const nlohmann::json::exception&) {
    throw damaged("field \"ranks\" is not a list of ranks as verify writes it");
  }
  Trace base = store.load(base_run);
  AllocationFilter filter = primaryFilter(base);
  r.memory = filter.describe();
  auto [b0, b1] = runSpan(base);
  const std::vector<std::pair<Ns, Ns>> base_steps = stepsOf(base);
  StepAxis base_axis(base_steps, b0, b1);
  r.steps = base_axis.steps();
  r.baseline = onAxis(memoryCurve(base, filter).points, base_axis, max_points);
  if (measured_run > 0) {
    Trace measured = store.load(measured_run);
    auto [m0, m1] = runSpan(measured);
    StepAxis axis(stepsOf(measured), m0, m1);
    r.measured = onAxis(memoryCurve(measured, primaryFilter(measured)).points, axis, max_points);
  }
  chartPlanReplay(r, base, chartAtPlanSize(r), max_points);
  return r;
}

nlohmann::json reportJson(const ReportData& r) {
  nlohmann::json j = toJson(r.v);
  j["format"] = "gcprof.report/1";
  j["trace"] = r.trace;
  j["verification_id"] = r.verification_id;
  j["memory"] = r.memory;
  j["chart"] = {{"baseline", r.baseline_label}, {"predicted", r.predicted_label}};
  if (!r.sized_note.empty()) j["chart"]["note"] = r.sized_note;
  if (!r.ranks.empty()) {
    j["ranks"] = r.ranks;
    if (!r.culprit.empty()) j["culprit"] = r.culprit;
  }
  return j;
}

std::vector<RankRow> rankRows(const ReportData& r) {
  std::vector<RankRow> rows;
  for (const auto& k : r.ranks) {
    RankRow row;
    row.rank = k.value("rank", -1);
    row.baseline_run = k["baseline"].value("run", int64_t{0});
    row.run = k["measured"].value("run", int64_t{0});
    row.status = k.value("status", std::string());
    row.verdict = k.value("verdict", std::string());
    row.predicted_peak = k["predicted"].value("peak_bytes", Bytes{0});
    row.measured_peak = k["measured"].value("peak_bytes", Bytes{0});
    row.measured_step_ns = k["measured"].value("step_ns", Ns{0});
    rows.push_back(row);
  }
  return rows;
}

}  // namespace gcprof::advisor
