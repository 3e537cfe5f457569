#include "verify/verification.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "byte_text.h"
#include "memory/memory_curve.h"
#include "saturating.h"
#include "simulate/device_peaks.h"

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
// so those are a baseline recorded on another schedule (traces of older versions
// fingerprinted every step). `what` names the values in details.
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
// not change them, and losses do not show it (BatchNorm statistics
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

Gate lossesGate(const Trace& baseline, const Trace& measured, double tolerance, std::vector<LossPair>* pairs) {
  return scalarGate("losses match", "loss values", scalarsOf(baseline, "loss"), scalarsOf(measured, "loss"),
                    tolerance, true, pairs);
}

double lossTolerance(const std::string& backend) { return backend == "cuda" ? 1e-3 : 1e-6; }

namespace {

// A run that recorded nothing (the job ended before its first allocation,
// `-- true`, the injector replaced) measured nothing: its 0 B peak is no
// pass, and steps it never recorded are none compared.
Gate recordedGate(const Trace& measured, const StepTime& baseline_steps, const StepTime& measured_steps) {
  size_t allocations = measured.allocations.size();
  bool steps_needed = baseline_steps.steps > 0;
  Gate g{"run recorded", allocations > 0 && (!steps_needed || measured_steps.steps > 0), ""};
  g.detail = std::to_string(allocations) + " allocations, " + std::to_string(measured_steps.steps) +
             (measured_steps.inferred ? " inferred" : "") + " steps recorded";
  if (!g.passed)
    g.detail += allocations == 0
                    ? ": the job allocated nothing that was recorded (it ended at start, or something in its "
                      "environment replaced gcprof's injector)"
                    : ": the baseline has steps, the verification none (did the job train?)";
  return g;
}

// Losses that differ are most often the job's own doing: a re-run of a job
// that is not deterministic differs with any plan, `none` included.
std::string lossHint(const Verification& v, const Gate& losses) {
  bool differ = !losses.passed && std::any_of(v.losses.begin(), v.losses.end(), [&](const LossPair& l) {
    return std::fabs(l.baseline - l.measured) > v.loss_tolerance * std::max(1.0, std::fabs(l.baseline)) ||
           std::isnan(l.baseline) != std::isnan(l.measured);
  });
  if (!differ) return "";
  std::string base = v.checkpoint.empty()
                         ? "the plan checkpoints nothing, so the job itself gives other losses when run again"
                         : "if the job gives other losses when run again, no plan can match them";
  return base + ": check that it is deterministic: every seed set (torch.manual_seed, random, numpy, "
                "data-loader workers and shuffling), dropout and augmentation seeded, no nondeterministic "
                "kernels (torch.use_deterministic_algorithms(True); on CUDA also CUBLAS_WORKSPACE_CONFIG=:4096:8). "
                "Then record the baseline again and verify the plan `gcprof advise TRACE --strategy none -o "
                "none.json` writes: it must PASS before any other plan can";
}

}  // namespace

double predictedSlowdown(const Verification& v) {
  Ns base = slowdownMeasured(v) ? v.baseline_step_ns : v.predicted_baseline_step_ns;
  return base > 0 ? static_cast<double>(v.predicted_step_ns) / static_cast<double>(base) - 1 : 0;
}

double measuredSlowdown(const Verification& v) {
  if (!slowdownMeasured(v)) return NAN;
  return v.baseline_step_ns > 0 ? static_cast<double>(v.measured_step_ns) / v.baseline_step_ns - 1 : 0;
}

bool slowdownMeasured(const Verification& v) { return v.other_size.empty(); }

Gate stepTimeGate(const Verification& v) {
  double off = v.measured_step_ns ? std::fabs(static_cast<double>(sat::sub(v.measured_step_ns, v.predicted_step_ns))) /
                                        static_cast<double>(v.measured_step_ns)
                                  : 1.0;
  char buf[320];
  if (slowdownMeasured(v))
    std::snprintf(buf, sizeof buf, "predicted %.1f ms (%+.1f%%), measured %.1f ms (%+.1f%%): %.1f%% off (tolerance %.0f%%)",
                  v.predicted_step_ns / 1e6, predictedSlowdown(v) * 100, v.measured_step_ns / 1e6,
                  measuredSlowdown(v) * 100, off * 100, v.step_tolerance * 100);
  else
    std::snprintf(buf, sizeof buf,
                  "at %s: predicted %.1f ms (%+.1f%% over its predicted no-checkpoint step), measured %.1f ms: "
                  "%.1f%% off (tolerance %.0f%%); no measured slowdown, the baseline ran another size",
                  v.other_size.c_str(), v.predicted_step_ns / 1e6, predictedSlowdown(v) * 100,
                  v.measured_step_ns / 1e6, off * 100, v.step_tolerance * 100);
  return {"step time prediction", off <= v.step_tolerance, buf};
}

namespace {

// How the plan met its budget when advised. A plan of a budget-blind
// strategy (every, uniform) is written even when it does not fit: it was
// never solved within the headroom, and saying so was wrong.
std::string budgetNote(const PlanFile& plan) {
  Bytes limit = sat::sub(plan.budget_bytes, plan.headroom_bytes);
  Bytes predicted = plan.budget_memory == "reserved" && plan.predicted_reserved_peak >= 0
                        ? plan.predicted_reserved_peak
                        : plan.predicted_peak;
  if (predicted > limit)
    return "; the plan did not fit when advised: " +
           (plan.strategy.empty() ? std::string("it") : "--strategy " + plan.strategy) + " predicted " +
           formatBytes(predicted) + ", above the budget less its " + formatBytes(plan.headroom_bytes) +
           " headroom (" + formatBytes(limit) + ")";
  return plan.headroom_bytes > 0 ? " (plan solved with " + formatBytes(plan.headroom_bytes) + " headroom)" : "";
}

Gate predictionGate(const char* name, Bytes predicted, Bytes measured, const std::string& how = "") {
  double err = measured ? std::fabs(static_cast<double>(sat::sub(measured, predicted))) / static_cast<double>(measured)
                        : 1.0;
  char buf[200];
  std::snprintf(buf, sizeof buf, "predicted %s, measured %s%s: %.1f%% off (tolerance %.0f%%)",
                formatBytes(predicted).c_str(), formatBytes(measured).c_str(), how.c_str(), err * 100,
                kPeakTolerance * 100);
  return {name, err <= kPeakTolerance, buf};
}

// The budget bounds the peak the plan was solved for: reserved memory when
// the plan says so (a CUDA run), allocated bytes otherwise.
void budgetGate(Verification& v, const std::string& headroom) {
  if (v.budget_memory != "reserved") {
    v.gates.push_back({"peak within budget", v.measured_peak > 0 && v.measured_peak <= v.budget,
                       "measured " + formatBytes(v.measured_peak) + " vs budget " + formatBytes(v.budget) + headroom});
    return;
  }
  if (v.measured_reserved_peak < 0) {
    v.gates.push_back({"peak within budget", false,
                       "the budget bounds reserved memory, and the verification run has none to measure"});
    return;
  }
  v.gates.push_back({"peak within budget", v.measured_reserved_peak <= v.budget,
                     "measured reserved " + formatBytes(v.measured_reserved_peak) + " (" +
                         v.measured_reserved_source + ") vs budget " + formatBytes(v.budget) + headroom});
}

}  // namespace

void judgePeakAgain(Verification& v, const PlanFile& plan, Bytes measured, const std::string& how) {
  v.measured_peak = measured;
  for (size_t i = 0; i < v.gates.size(); ++i) {
    if (v.gates[i].name == "peak within budget") {
      budgetGate(v, budgetNote(plan));  // appended: moved into the old one's place
      v.gates[i] = v.gates.back();
      v.gates.pop_back();
      v.gates[i].detail += how;
    } else if (v.gates[i].name == "peak prediction") {
      v.gates[i] = predictionGate("peak prediction", v.predicted_peak, v.measured_peak, how);
    }
  }
  bool pass = std::all_of(v.gates.begin(), v.gates.end(), [](const Gate& g) { return g.passed; });
  v.verdict = pass ? "PASS" : "FAIL";
}

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
  StepTime baseline_steps = stepTime(baseline, plan.units), measured_steps = stepTime(measured, plan.units);
  v.baseline_step_ns = baseline_steps.ns;
  v.predicted_step_ns = plan.predicted_step_ns;
  v.measured_step_ns = measured_steps.ns;
  v.inferred_steps = baseline_steps.inferred;
  v.predicted_recompute_ns = plan.predicted_recompute_ns;
  v.exit_code = job_exit_code;
  v.loss_tolerance = lossTolerance(measured.run.backend);

  v.budget_memory = plan.budget_memory;
  v.predicted_reserved_peak = plan.predicted_reserved_peak;
  if (v.predicted_reserved_peak >= 0 || v.budget_memory == "reserved") {
    DevicePeaks measured_peaks = devicePeaks(measured);
    v.measured_reserved_peak = measured_peaks.reserved;
    v.measured_reserved_source = measured_peaks.reserved_source;
  }

  v.gates.push_back({"job completed", job_exit_code == 0,
                     "the verification run exited with " + std::to_string(job_exit_code)});
  v.gates.push_back(recordedGate(measured, baseline_steps, measured_steps));
  budgetGate(v, budgetNote(plan));
  v.gates.push_back(predictionGate("peak prediction", v.predicted_peak, v.measured_peak));
  if (v.predicted_reserved_peak >= 0) {
    if (v.measured_reserved_peak >= 0)
      v.gates.push_back(predictionGate("reserved peak prediction", v.predicted_reserved_peak,
                                       v.measured_reserved_peak, " (" + v.measured_reserved_source + ")"));
    else
      v.gates.push_back({"reserved peak prediction", false,
                         "the verification run has no reserved memory to compare (no segment events, "
                         "and its allocator is not one the model covers)"});
  }
  size_t lossGate = v.gates.size();
  v.gates.push_back(lossesGate(baseline, measured, v.loss_tolerance, &v.losses));
  fingerprintGates(baseline, measured, v.loss_tolerance, v.gates);
  if (step_tolerance) {
    v.step_tolerance = *step_tolerance;
    v.gates.push_back(stepTimeGate(v));
  }
  v.hint = lossHint(v, v.gates[lossGate]);
  bool pass = std::all_of(v.gates.begin(), v.gates.end(), [](const Gate& g) { return g.passed; });
  v.verdict = pass ? "PASS" : "FAIL";
  return v;
}

}  // namespace gcprof::advisor
