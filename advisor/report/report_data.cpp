#include "report/report_data.h"

#include <algorithm>
#include <climits>

#include "model/advice_error.h"
#include "model/chain_peak.h"
#include "model/step_layout.h"
#include "saturating.h"
#include "simulate/replay_simulator.h"
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

namespace {

// The plan's segments as unit indexes; empty when a name is not a unit.
std::optional<Segments> segmentsOf(const PlanFile& plan) {
  Segments segs;
  for (const auto& seg : plan.checkpoint) {
    if (seg.empty()) continue;
    auto first = std::find(plan.units.begin(), plan.units.end(), seg.front());
    auto last = std::find(plan.units.begin(), plan.units.end(), seg.back());
    if (first == plan.units.end() || last == plan.units.end()) return std::nullopt;
    segs.push_back({static_cast<int>(first - plan.units.begin()),
                    static_cast<int>(last - plan.units.begin())});
  }
  return segs;
}

}  // namespace

ReportData loadReport(TraceStore& store, int64_t verification_id, size_t max_points) {
  std::vector<VerificationRecord> all = store.verifications();
  if (all.empty())
    throw AdviceError(store.path() + ": holds no verification; run `gcprof verify " + store.path() +
                      " --plan plan.json` first");
  const VerificationRecord* rec = &all.back();
  if (verification_id > 0) {
    rec = nullptr;
    for (const VerificationRecord& v : all)
      if (v.id == verification_id) rec = &v;
    if (!rec)
      throw AdviceError(store.path() + ": no verification " + std::to_string(verification_id) +
                        " (it has " + std::to_string(all.size()) + ")");
  }
  ReportData r;
  r.trace = validUtf8(store.path());  // a path is bytes; every report format is UTF-8
  r.verification_id = rec->id;
  nlohmann::json doc = nlohmann::json::parse(rec->json, nullptr, false);
  try {
    if (doc.is_discarded()) throw std::runtime_error("not JSON");
    r.v = fromJson(doc);
  } catch (const std::exception& e) {
    throw AdviceError(store.path() + ": verification " + std::to_string(rec->id) +
                      " is damaged (" + e.what() + "); run gcprof verify again");
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
  if (doc.contains("ranks") && doc["ranks"].is_array() && !doc["ranks"].empty()) {
    r.ranks = doc["ranks"];
    r.culprit = doc.value("culprit", std::string());
    const nlohmann::json* worst = nullptr;
    for (const auto& k : r.ranks)
      if (!worst || k["measured"].value("peak_bytes", Bytes{0}) > (*worst)["measured"].value("peak_bytes", Bytes{0}))
        worst = &k;
    base_run = (*worst)["baseline"].value("run", base_run);
    measured_run = (*worst)["measured"].value("run", int64_t{0});
    r.chart_rank = worst->value("rank", -1);
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
  if (r.plan && !r.plan->units.empty()) {
    if (std::optional<Segments> segs = segmentsOf(*r.plan)) {
      RunLayout layout = stepLayouts(base, r.plan->units);
      SimulationOptions o;
      o.want_curve = true;
      Simulation sim = simulate(base, filter, layout, *segs, o);
      std::vector<std::pair<Ns, Ns>> bounds = sim.step_bounds;
      std::sort(bounds.begin(), bounds.end());
      // A run without step markers is one step: nothing to shift by.
      Ns shift = bounds.empty() || base_steps.empty() ? 0 : sat::sub(bounds.back().second, base_steps.back().second);
      StepAxis axis(bounds.size() == base_steps.size() ? bounds : base_steps, b0, sat::add(b1, shift));
      r.predicted = onAxis(sim.curve, axis, max_points);
      std::vector<bool> checkpointed(r.plan->units.size(), false);
      for (const Segment& s : *segs)
        for (int k = s.first; k <= s.last; ++k) checkpointed[k] = true;
      for (const StepLayout& st : layout.steps) {
        if (!st.complete) continue;
        for (size_t k = 0; k < st.units.size(); ++k) {
          const UnitWindow& w = st.units[k];
          const std::string& name = r.plan->units[k];
          r.bands.push_back({name, base_axis(w.fwd_start), base_axis(w.fwd_end), true, checkpointed[k]});
          r.bands.push_back({name, base_axis(w.bwd_start), base_axis(w.bwd_end), false, checkpointed[k]});
        }
      }
    }
  }
  return r;
}

nlohmann::json reportJson(const ReportData& r) {
  nlohmann::json j = toJson(r.v);
  j["format"] = "gcprof.report/1";
  j["trace"] = r.trace;
  j["verification_id"] = r.verification_id;
  j["memory"] = r.memory;
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
