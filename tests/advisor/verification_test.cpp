// verify's value gates (losses, gradients, buffers) pair the two runs' values
// by step index: the python shim fingerprints a schedule of steps (0, 1, 2,
// then every 8th: gcprof/fingerprints.py) and a --steps window starts late.
#include "verify/verification.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gcprof::advisor {
namespace {

// A run that recorded `name` = value at each of `steps` (value = 1 + step / 10,
// so that values of different steps differ).
void addScalars(Trace& t, const std::string& name, const std::vector<int64_t>& steps) {
  for (int64_t s : steps) t.scalars.push_back({s, name, 1.0 + s / 10.0});
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t s = from; s < to; ++s) out.push_back(s);
  return out;
}

const std::vector<int64_t> kScheduled = {0, 1, 2, 8, 16};  // fingerprints of 20 steps

// A baseline and a verification of `steps` steps each: a loss per step, grad
// and buffer norms on the schedule.
Trace run(int64_t id, const std::vector<int64_t>& losses, const std::vector<int64_t>& fingerprints) {
  Trace t;
  t.run.id = id;
  t.run.backend = "host";
  addScalars(t, "loss", losses);
  addScalars(t, "grad_norm", fingerprints);
  addScalars(t, "buffer_norm", fingerprints);
  return t;
}

std::map<std::string, Gate> gatesOf(const Trace& baseline, const Trace& measured) {
  PlanFile plan;
  plan.budget_bytes = 1;
  std::map<std::string, Gate> out;
  for (const Gate& g : verify(baseline, measured, plan, 1, 0).gates) out[g.name] = g;
  return out;
}

// A plan `advise --strategy every` wrote although it did not fit was
// reported as "plan solved with N headroom".
TEST(Verification, APlanThatDidNotFitWhenAdvisedSaysSoNotSolvedWithHeadroom) {
  Trace baseline = run(1, range(0, 3), {}), measured = run(2, range(0, 3), {});
  PlanFile plan;
  plan.strategy = "every";
  plan.budget_bytes = 1000;
  plan.headroom_bytes = 30;
  plan.predicted_peak = 990;
  std::string detail;
  for (const Gate& g : verify(baseline, measured, plan, 1, 0).gates)
    if (g.name == "peak within budget") detail = g.detail;
  EXPECT_EQ(detail.find("solved with"), std::string::npos) << detail;
  EXPECT_NE(detail.find("the plan did not fit when advised: --strategy every predicted 990 B, above the "
                        "budget less its 30 B headroom (970 B)"),
            std::string::npos)
      << detail;
  plan.predicted_peak = 970;
  for (const Gate& g : verify(baseline, measured, plan, 1, 0).gates)
    if (g.name == "peak within budget") detail = g.detail;
  EXPECT_NE(detail.find("(plan solved with 30 B headroom)"), std::string::npos) << detail;
}

TEST(Verification, FingerprintsOnAScheduleAreComparedStepByStep) {
  Trace base = run(1, range(0, 20), kScheduled);
  Trace same = run(2, range(0, 20), kScheduled);
  auto g = gatesOf(base, same);
  ASSERT_TRUE(g.count("gradients match") && g.count("buffers match"));
  EXPECT_TRUE(g["gradients match"].passed) << g["gradients match"].detail;
  EXPECT_EQ(g["buffers match"].detail.rfind("5 steps compared, 0 differ", 0), 0u) << g["buffers match"].detail;
  EXPECT_EQ(g["losses match"].detail.rfind("20 steps compared, 0 differ", 0), 0u) << g["losses match"].detail;

  // A plan that changes running statistics shows at step 0.
  Trace changed = same;
  for (Scalar& s : changed.scalars)
    if (s.name == "buffer_norm" && s.step == 0) s.value += 0.5;
  g = gatesOf(base, changed);
  EXPECT_FALSE(g["buffers match"].passed);
  EXPECT_EQ(g["buffers match"].detail.rfind("5 steps compared, 1 differ", 0), 0u) << g["buffers match"].detail;
  EXPECT_TRUE(g["gradients match"].passed);
}

TEST(Verification, ValuesPairByStepNotByPosition) {
  // The verification's step 1 has no gradient norm (no gradients that step):
  // by position, its step 2 would be held against the baseline's step 1.
  Trace base = run(1, range(0, 4), {0, 2, 3});
  Trace meas = run(2, range(0, 4), {0, 1, 2, 3});
  auto g = gatesOf(base, meas);
  EXPECT_TRUE(g["gradients match"].passed) << g["gradients match"].detail;
  EXPECT_NE(g["gradients match"].detail.find("3 steps compared, 0 differ"), std::string::npos);
  EXPECT_NE(g["gradients match"].detail.find("1 verification steps not in the baseline"), std::string::npos);

  // A baseline recorded with `--steps 10:12`: its losses are those of steps
  // 10 and 11 of the re-run, which records every step.
  Trace window = run(1, {10, 11}, {});
  g = gatesOf(window, run(2, range(0, 16), kScheduled));
  EXPECT_TRUE(g["losses match"].passed) << g["losses match"].detail;
  EXPECT_EQ(g["losses match"].detail.rfind("2 steps compared, 0 differ", 0), 0u) << g["losses match"].detail;
  EXPECT_EQ(g.count("gradients match"), 0u);  // the window holds no fingerprinted step
}

TEST(Verification, RunsOfDifferentLengthsCompareTheStepsBothHave) {
  // The re-run stopped after 10 of 20 steps: what both have is compared (a
  // difference at step 8 is found), and the losses of steps it never reached fail.
  Trace base = run(1, range(0, 20), kScheduled);
  Trace shorter = run(2, range(0, 10), {0, 1, 2, 8});
  for (Scalar& s : shorter.scalars)
    if (s.name == "grad_norm" && s.step == 8) s.value *= 1.001;
  auto g = gatesOf(base, shorter);
  EXPECT_FALSE(g["losses match"].passed);
  EXPECT_NE(g["losses match"].detail.find("10 steps compared, 0 differ"), std::string::npos);
  EXPECT_NE(g["losses match"].detail.find("10 baseline steps missing from the verification"),
            std::string::npos);
  EXPECT_FALSE(g["gradients match"].passed);
  EXPECT_EQ(g["gradients match"].detail.rfind("4 steps compared, 1 differ", 0), 0u)
      << g["gradients match"].detail;

  // A baseline fingerprinted at every step (as older versions recorded) against a
  // re-run on the schedule: the fingerprints both have are compared, the
  // losses hold the runs to the same steps.
  Trace every = run(1, range(0, 20), range(0, 20));
  g = gatesOf(every, run(2, range(0, 20), kScheduled));
  EXPECT_TRUE(g["gradients match"].passed) << g["gradients match"].detail;
  EXPECT_NE(g["gradients match"].detail.find("5 steps compared"), std::string::npos);
  EXPECT_NE(g["gradients match"].detail.find("15 baseline steps missing from the verification (not compared)"),
            std::string::npos);
  EXPECT_TRUE(g["losses match"].passed);

  // No step in common: nothing compared is no pass.
  g = gatesOf(run(1, {0, 1}, {}), run(2, {5, 6}, {}));
  EXPECT_FALSE(g["losses match"].passed);
  EXPECT_NE(g["losses match"].detail.find("no step in common"), std::string::npos) << g["losses match"].detail;
}

// A job that is not deterministic fails "losses match" with any plan: the
// verdict says what to check and how to rerun the baseline, not only "differ".
TEST(Verification, LossesThatDifferComeWithAHintAboutDeterminism) {
  Trace base = run(1, range(0, 3), {});
  Trace other = run(2, range(0, 3), {});
  for (Scalar& s : other.scalars) s.value += 0.01;
  PlanFile none;
  none.budget_bytes = 1;
  Verification v = verify(base, other, none, 1, 0);
  EXPECT_EQ(v.verdict, "FAIL");
  EXPECT_NE(v.hint.find("the plan checkpoints nothing, so the job itself gives other losses"), std::string::npos)
      << v.hint;
  for (const char* word : {"torch.manual_seed", "dropout", "use_deterministic_algorithms", "--strategy none"})
    EXPECT_NE(v.hint.find(word), std::string::npos) << word << " in " << v.hint;
  EXPECT_EQ(fromJson(toJson(v)).hint, v.hint);
  // Losses that match need no hint; nor do missing steps (the re-run stopped).
  EXPECT_EQ(verify(base, run(3, range(0, 3), {}), none, 1, 0).hint, "");
  EXPECT_EQ(verify(base, run(3, range(0, 2), {}), none, 1, 0).hint, "");
}

}  // namespace
}  // namespace gcprof::advisor

namespace gcprof::advisor {
namespace {

constexpr Bytes kMiB = 1 << 20;

// A CUDA run: two tensors on device 0 and, when `segments`, the allocator's
// segment holding them (measured reserved memory).
Trace cudaRun(int64_t id, bool segments) {
  Trace t = run(id, range(0, 3), {});
  t.run.backend = "cuda";
  auto add = [&](Ns at, Ns free, Bytes bytes, AllocKind kind) {
    Allocation a;
    a.id = static_cast<int64_t>(t.allocations.size()) + 1;
    a.addr = 0x100000 * static_cast<uint64_t>(a.id);
    a.bytes = bytes;
    a.device = 0;
    a.alloc = at;
    a.free = free;
    a.kind = static_cast<int>(kind);
    t.allocations.push_back(a);
  };
  if (segments) add(0, -1, 20 * kMiB, AllocKind::Segment);
  add(1, 5, 3 * kMiB, AllocKind::Tensor);
  add(2, 6, 4 * kMiB, AllocKind::Tensor);
  return t;
}

PlanFile reservedPlan(Bytes budget, Bytes predicted_reserved) {
  PlanFile p;
  p.budget_bytes = budget;
  p.budget_memory = "reserved";
  p.predicted_peak = 7 * kMiB;
  p.predicted_reserved_peak = predicted_reserved;
  return p;
}

const Gate* gate(const Verification& v, const std::string& name) {
  for (const Gate& g : v.gates)
    if (g.name == name) return &g;
  return nullptr;
}

TEST(Verification, ReservedBudgetsAreGatedOnMeasuredReservedMemory) {
  Trace baseline = cudaRun(1, true), measured = cudaRun(2, true);
  Verification v = verify(baseline, measured, reservedPlan(21 * kMiB, 20 * kMiB), 1, 0);
  EXPECT_EQ(v.measured_peak, 7 * kMiB);
  EXPECT_EQ(v.measured_reserved_peak, 20 * kMiB);
  EXPECT_EQ(v.measured_reserved_source, "segments");
  ASSERT_NE(gate(v, "peak within budget"), nullptr);
  EXPECT_TRUE(gate(v, "peak within budget")->passed) << gate(v, "peak within budget")->detail;
  EXPECT_NE(gate(v, "peak within budget")->detail.find("reserved"), std::string::npos);
  ASSERT_NE(gate(v, "reserved peak prediction"), nullptr);
  EXPECT_TRUE(gate(v, "reserved peak prediction")->passed);
  EXPECT_TRUE(gate(v, "peak prediction")->passed);  // the allocated one, gated too
  // Tensor bytes fit 19 MiB; reserved memory does not: the gate says FAIL.
  Verification tight = verify(baseline, measured, reservedPlan(19 * kMiB, 20 * kMiB), 1, 0);
  EXPECT_FALSE(gate(tight, "peak within budget")->passed);
  EXPECT_EQ(tight.verdict, "FAIL");
  // A reserved prediction 25% off fails its own gate.
  Verification off = verify(baseline, measured, reservedPlan(30 * kMiB, 16 * kMiB), 1, 0);
  EXPECT_FALSE(gate(off, "reserved peak prediction")->passed);
  Verification back = fromJson(toJson(v));
  EXPECT_EQ(back.budget_memory, "reserved");
  EXPECT_EQ(back.measured_reserved_peak, 20 * kMiB);
  EXPECT_EQ(back.predicted_reserved_peak, 20 * kMiB);
}

TEST(Verification, WithoutSegmentsReservedMemoryIsTheModelsOverTheTensors) {
  // 3 and 4 MiB tensors share one 20 MiB segment of the native allocator.
  Verification v = verify(cudaRun(1, false), cudaRun(2, false), reservedPlan(21 * kMiB, 20 * kMiB), 1, 0);
  EXPECT_EQ(v.measured_reserved_peak, 20 * kMiB);
  EXPECT_EQ(v.measured_reserved_source, "model");
  EXPECT_TRUE(gate(v, "peak within budget")->passed);
}

TEST(Verification, AllocatedPlansKeepTheirGates) {
  PlanFile p;
  p.budget_bytes = 8 * kMiB;
  p.predicted_peak = 7 * kMiB;
  Verification v = verify(cudaRun(1, true), cudaRun(2, true), p, 1, 0);
  EXPECT_EQ(v.budget_memory, "allocated");
  EXPECT_TRUE(gate(v, "peak within budget")->passed);
  EXPECT_EQ(gate(v, "reserved peak prediction"), nullptr);
  EXPECT_EQ(v.measured_reserved_peak, -1);
}

}  // namespace
}  // namespace gcprof::advisor
