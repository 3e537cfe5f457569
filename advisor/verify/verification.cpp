#include "verify/verification.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "byte_text.h"
#include "model/median.h"
#include "model/memory_curve.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

std::vector<std::pair<int64_t, double>> scalarsOf(const Trace& t, const std::string& name) {
  std::vector<std::pair<int64_t, double>> out;
  for (const Scalar& s : t.scalars)
    if (s.name == name) out.push_back({s.step, s.value});
  return out;
}

// Step by step, the verification's values of one scalar against the
// baseline's, to a relative tolerance. Values pair by step index, not by
// position: the shim fingerprints a schedule of steps (fingerprints.py), a
// `record --steps A:B` baseline starts at step A, and a step may lack a value.
// Values of one step pair in the order recorded. Steps only the verification
// has (outside a --steps window) are not compared. With `whole_baseline`
// every baseline value must have its pair (losses: the re-run must reach
// every recorded step); without it (fingerprints) steps only the baseline has
// are left out too: the loss gate already holds the runs to the same steps,
// so those are a baseline recorded on another schedule (before wave 9 every
// step was fingerprinted). `what` names the values in details.
Gate scalarGate(const std::string& gate, const std::string& what,
                std::vector<std::pair<int64_t, double>> base, std::vector<std::pair<int64_t, double>> meas,
                double tol, bool whole_baseline, std::vector<LossPair>* pairs) {
  auto byStep = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(base.begin(), base.end(), byStep);
  std::stable_sort(meas.begin(), meas.end(), byStep);
  size_t n = 0, i = 0, j = 0, missing = 0;
  int bad = 0;
  double worst = 0;
  while (i < base.size() && j < meas.size()) {
    if (base[i].first < meas[j].first) {
      ++missing;
      ++i;
    } else if (meas[j].first < base[i].first) {
      ++j;
    } else {
      if (pairs) pairs->push_back({meas[j].first, base[i].second, meas[j].second});
      double diff = std::fabs(base[i].second - meas[j].second);
      worst = std::max(worst, diff);
      if (diff > tol * std::max(1.0, std::fabs(base[i].second))) ++bad;
      ++n;
      ++i;
      ++j;
    }
  }
  missing += base.size() - i;
  size_t unpaired = meas.size() - n;
  Gate g{gate, n > 0 && bad == 0 && (missing == 0 || !whole_baseline), ""};
  char buf[300];
  if (n == 0) {
    std::snprintf(buf, sizeof buf, "no %s to compare (baseline %zu, verification %zu%s)", what.c_str(),
                  base.size(), meas.size(), base.empty() || meas.empty() ? "" : ", no step in common");
  } else {
    std::snprintf(buf, sizeof buf, "%zu steps compared, %d differ, largest difference %.3g (tolerance %.0e)",
                  n, bad, worst, tol);
  }
  g.detail = buf;
  if (n > 0 && missing > 0)
    g.detail += "; " + std::to_string(missing) + " baseline steps missing from the verification" +
                (whole_baseline ? "" : " (not compared)");
  if (n > 0 && unpaired > 0)
    g.detail += "; " + std::to_string(unpaired) + " verification steps not in the baseline (not compared)";
  return g;
}

// Gradients and buffers (running statistics) after the fingerprinted steps
// (the first three and every 8th, fingerprints.py): a plan must
// not change them, and losses do not show it (issue 15: BatchNorm statistics
// updated twice by recomputation while every loss matched). Recorded by the
// python shim (gcprof/fingerprints.py) and by LibTorch programs that
// record the same scalars (samples/cpp/resnet_train.cpp); a baseline without
// them (gpt_train) gets no gate rather than a failing one.
void fingerprintGates(const Trace& baseline, const Trace& measured, double tol, std::vector<Gate>& gates) {
  for (const auto& [scalar, gate, what] :
       {std::tuple<const char*, const char*, const char*>{"grad_norm", "gradients match", "gradient norms"},
        {"buffer_norm", "buffers match", "buffer norms (running statistics)"}}) {
    auto base = scalarsOf(baseline, scalar);
    if (base.empty()) continue;
    gates.push_back(scalarGate(gate, what, base, scalarsOf(measured, scalar), tol, false, nullptr));
  }
}

}  // namespace

double lossTolerance(const std::string& backend) { return backend == "cuda" ? 1e-3 : 1e-6; }

Ns medianStepNs(const Trace& run) {
  std::vector<Ns> d;
  for (const Step& s : run.steps) d.push_back(sat::sub(s.end, s.start));
  if (d.size() >= 3) d.erase(d.begin());
  if (d.empty()) return run.run.ended > run.run.started ? sat::sub(run.run.ended, run.run.started) : 0;
  return median(std::move(d));
}

double predictedSlowdown(const Verification& v) {
  return v.baseline_step_ns > 0 ? static_cast<double>(v.predicted_step_ns) / v.baseline_step_ns - 1 : 0;
}

double measuredSlowdown(const Verification& v) {
  return v.baseline_step_ns > 0 ? static_cast<double>(v.measured_step_ns) / v.baseline_step_ns - 1 : 0;
}

// How the plan met its budget when advised. A plan of a budget-blind
// strategy (every, uniform) is written even when it does not fit: it was
// never solved within the headroom, and saying so was wrong.
namespace {
std::string budgetNote(const PlanFile& plan) {
  Bytes limit = sat::sub(plan.budget_bytes, plan.headroom_bytes);
  if (plan.predicted_peak > limit)
    return "; the plan did not fit when advised: " +
           (plan.strategy.empty() ? std::string("it") : "--strategy " + plan.strategy) + " predicted " +
           formatBytes(plan.predicted_peak) + ", above the budget less its " + formatBytes(plan.headroom_bytes) +
           " headroom (" + formatBytes(limit) + ")";
  return plan.headroom_bytes > 0 ? " (plan solved with " + formatBytes(plan.headroom_bytes) + " headroom)" : "";
}
}  // namespace

Verification verify(const Trace& baseline, const Trace& measured, const PlanFile& plan,
                    int64_t plan_id, int job_exit_code, std::optional<double> step_tolerance) {
  Verification v;
  v.strategy = plan.strategy;
  v.checkpoint = plan.checkpoint;
  v.budget = plan.budget_bytes;
  v.headroom = plan.headroom_bytes;
  v.plan_id = plan_id;
  v.baseline_run = baseline.run.id;
  v.run = measured.run.id;
  v.baseline_peak = memoryCurve(baseline).peak;
  v.predicted_peak = plan.predicted_peak;
  v.measured_peak = memoryCurve(measured).peak;
  v.baseline_step_ns = medianStepNs(baseline);
  v.predicted_step_ns = plan.predicted_step_ns;
  v.measured_step_ns = medianStepNs(measured);
  v.predicted_recompute_ns = plan.predicted_recompute_ns;
  v.exit_code = job_exit_code;
  v.loss_tolerance = lossTolerance(measured.run.backend);

  v.gates.push_back({"job completed", job_exit_code == 0,
                     "the verification run exited with " + std::to_string(job_exit_code)});
  v.gates.push_back({"peak within budget", v.measured_peak <= v.budget,
                     "measured " + formatBytes(v.measured_peak) + " vs budget " + formatBytes(v.budget) +
                         budgetNote(plan)});
  double err = v.measured_peak ? std::fabs(static_cast<double>(sat::sub(v.measured_peak, v.predicted_peak))) /
                                     static_cast<double>(v.measured_peak)
                               : 1.0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "predicted %s, measured %s: %.1f%% off (tolerance %.0f%%)",
                formatBytes(v.predicted_peak).c_str(), formatBytes(v.measured_peak).c_str(), err * 100,
                kPeakTolerance * 100);
  v.gates.push_back({"peak prediction", err <= kPeakTolerance, buf});
  v.gates.push_back(scalarGate("losses match", "loss values", scalarsOf(baseline, "loss"),
                               scalarsOf(measured, "loss"), v.loss_tolerance, true, &v.losses));
  fingerprintGates(baseline, measured, v.loss_tolerance, v.gates);
  if (step_tolerance) {
    v.step_tolerance = *step_tolerance;
    double off = v.measured_step_ns ? std::fabs(static_cast<double>(sat::sub(v.measured_step_ns, v.predicted_step_ns))) /
                                          static_cast<double>(v.measured_step_ns)
                                    : 1.0;
    char sbuf[200];
    std::snprintf(sbuf, sizeof sbuf, "predicted %.1f ms (%+.1f%%), measured %.1f ms (%+.1f%%): %.1f%% off (tolerance %.0f%%)",
                  v.predicted_step_ns / 1e6, predictedSlowdown(v) * 100, v.measured_step_ns / 1e6,
                  measuredSlowdown(v) * 100, off * 100, *step_tolerance * 100);
    v.gates.push_back({"step time prediction", off <= *step_tolerance, sbuf});
  }
  bool pass = std::all_of(v.gates.begin(), v.gates.end(), [](const Gate& g) { return g.passed; });
  v.verdict = pass ? "PASS" : "FAIL";
  return v;
}

nlohmann::json toJson(const Verification& v) {
  nlohmann::json gates = nlohmann::json::array(), losses = nlohmann::json::array();
  for (const Gate& g : v.gates) gates.push_back({{"name", g.name}, {"passed", g.passed}, {"detail", g.detail}});
  for (const LossPair& l : v.losses)
    losses.push_back({{"step", l.step}, {"baseline", l.baseline}, {"measured", l.measured}});
  return {{"verdict", v.verdict},
          {"strategy", v.strategy},
          {"checkpoint", v.checkpoint},
          {"budget_bytes", v.budget},
          {"headroom_bytes", v.headroom},
          {"plan_id", v.plan_id},
          {"baseline", {{"run", v.baseline_run}, {"peak_bytes", v.baseline_peak}, {"step_ns", v.baseline_step_ns}}},
          {"predicted",
           {{"peak_bytes", v.predicted_peak}, {"step_ns", v.predicted_step_ns},
            {"recompute_ns", v.predicted_recompute_ns}}},
          {"measured",
           {{"run", v.run}, {"peak_bytes", v.measured_peak}, {"step_ns", v.measured_step_ns},
            {"exit_code", v.exit_code}}},
          {"loss_tolerance", v.loss_tolerance},
          {"step_tolerance", v.step_tolerance >= 0 ? nlohmann::json(v.step_tolerance) : nlohmann::json()},
          {"losses", losses},
          {"gates", gates}};
}

Verification fromJson(const nlohmann::json& j) {
  Verification v;
  v.verdict = j.at("verdict");
  v.strategy = j.value("strategy", "");
  v.checkpoint = j.at("checkpoint").get<std::vector<std::vector<std::string>>>();
  v.budget = j.at("budget_bytes");
  v.headroom = j.value("headroom_bytes", Bytes{0});
  v.plan_id = j.value("plan_id", 0);
  v.baseline_run = j.at("baseline").value("run", 0);
  v.baseline_peak = j.at("baseline").at("peak_bytes");
  v.baseline_step_ns = j.at("baseline").at("step_ns");
  v.predicted_peak = j.at("predicted").at("peak_bytes");
  v.predicted_step_ns = j.at("predicted").value("step_ns", Ns{0});
  v.predicted_recompute_ns = j.at("predicted").value("recompute_ns", Ns{0});
  v.run = j.at("measured").value("run", 0);
  v.measured_peak = j.at("measured").at("peak_bytes");
  v.measured_step_ns = j.at("measured").at("step_ns");
  v.exit_code = j.at("measured").value("exit_code", 0);
  v.loss_tolerance = j.value("loss_tolerance", 0.0);
  if (j.contains("step_tolerance") && j["step_tolerance"].is_number()) v.step_tolerance = j["step_tolerance"];
  for (const auto& l : j.value("losses", nlohmann::json::array()))
    v.losses.push_back({l.at("step"), l.at("baseline"), l.at("measured")});
  for (const auto& g : j.at("gates")) v.gates.push_back({g.at("name"), g.at("passed"), g.at("detail")});
  return v;
}

}  // namespace gcprof::advisor
