// Comparing a verification run (the job re-run with a plan applied) against
// its baseline and the plan's predictions: the gates that make the verdict.
// UI-free: `gcprof verify` computes it, the reports and the GUI read it back
// from the trace's verifications table as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/plan_file.h"
#include "trace.h"
#include "units/step_time.h"

namespace gcprof::advisor {

struct Gate {
  std::string name;
  bool passed = false;
  std::string detail;
};

struct LossPair {
  int64_t step = 0;
  double baseline = 0;
  double measured = 0;
};

struct Verification {
  std::string verdict;  // PASS | FAIL
  std::string strategy;
  std::vector<std::vector<std::string>> checkpoint;
  Bytes budget = 0;
  Bytes headroom = 0;  // the plan was solved within budget - headroom
  int64_t plan_id = 0, baseline_run = 0, run = 0;
  Bytes baseline_peak = 0, predicted_peak = 0, measured_peak = 0;
  Ns baseline_step_ns = 0, predicted_step_ns = 0, measured_step_ns = 0;
  Ns predicted_recompute_ns = 0;
  bool inferred_steps = false;  // neither run had step markers: steps as advise infers them
  // CUDA runs: the caching allocator's reserved peak, predicted by the plan
  // and measured on the verification run (from its segment events, else the
  // allocator model over its tensor events: `measured_reserved_source`);
  // -1 where there is none. `budget_memory` is the peak the budget bounds.
  std::string budget_memory = "allocated";
  Bytes predicted_reserved_peak = -1, measured_reserved_peak = -1;
  std::string measured_reserved_source;
  int exit_code = 0;
  double loss_tolerance = 0;
  double step_tolerance = -1;  // the step time gate's tolerance; -1: no gate (the default)
  std::vector<LossPair> losses;
  std::vector<Gate> gates;
  std::string hint;  // what to check when a gate failed for a reason outside the plan; "" if none
  // Set when the re-run ran another size than the baseline (a what-if plan):
  // "batch=24 (baseline batch=8)". A step of one size against a step of
  // another is no slowdown, so then the predicted slowdown is against the
  // plan's predicted no-checkpoint step at that size, and there is no
  // measured one (compareStepsAtSize, verify/size_argument.h).
  std::string other_size;
  Ns predicted_baseline_step_ns = 0;  // the plan's no-checkpoint step at other_size's size
  // Set when the baseline was recorded by `gcprof attach`: how the re-run's
  // steps were paired with it and what its peak is compared on
  // (verify/attached_run.h); "" for a recorded baseline.
  std::string attached;
};

// The prediction may be off by this fraction of the measured peak (the
// allocated peak's and the reserved peak's gates alike).
constexpr double kPeakTolerance = 0.05;

// Losses must agree to this relative tolerance: recomputation replays the
// same kernels with the same RNG state, so on CPU they are bit-identical in
// practice; CUDA kernels may pick other algorithms, hence a looser bound.
double lossTolerance(const std::string& backend);


// The losses of `measured` against the baseline's, step by step, each
// within `tolerance` of the baseline's value (relative, absolute below 1);
// the pairs compared go to `pairs` when given.
Gate lossesGate(const Trace& baseline, const Trace& measured, double tolerance,
                std::vector<LossPair>* pairs = nullptr);

// Step time is always reported; it is a gate only with `step_tolerance`
// (0.25: measured within 25% of predicted). Off by default: on a shared or
// noisy machine a re-run's step time says little (docs/plan.md).
Verification verify(const Trace& baseline, const Trace& measured, const PlanFile& plan,
                    int64_t plan_id, int job_exit_code,
                    std::optional<double> step_tolerance = std::nullopt);

// The peak gates judged again on `measured` (host memory, allocated bytes)
// in place of the re-run's own peak, `how` added to their details; the
// verdict follows.
void judgePeakAgain(Verification& v, const PlanFile& plan, Bytes measured, const std::string& how);

// Slowdown against the baseline's step time (0.1 = 10% slower), at one
// size: the predicted one against the predicted no-checkpoint step when the
// re-run ran another size; the measured one only when slowdownMeasured (NaN
// otherwise).
double predictedSlowdown(const Verification& v);
double measuredSlowdown(const Verification& v);
bool slowdownMeasured(const Verification& v);

// Measured against predicted step time within v.step_tolerance.
Gate stepTimeGate(const Verification& v);

// A stored verification row that is not what toJson writes; the message
// names the field at fault (the caller adds the trace and row).
struct VerificationRowError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

nlohmann::json toJson(const Verification& v);
// Throws VerificationRowError, never a json exception.
Verification fromJson(const nlohmann::json& j);

}  // namespace gcprof::advisor
