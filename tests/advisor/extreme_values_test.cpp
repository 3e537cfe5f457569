// Traces with sizes and times near the int64 limits (a damaged or hand-made
// file) go through every stage of the advisor, the verification and the
// reports without signed overflow: the sanitizer build (make sanitize) fails
// on any, and the plain build checks that no figure wraps to a negative one.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

#include "chain_traces.h"
#include "advice_error.h"
#include "plan/advice.h"
#include "plan/plan_file.h"
#include "report/chrome_trace.h"
#include "report/report_data.h"
#include "saturating.h"
#include "trace_file.h"
#include "trace_store.h"
#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Saturating, ClampsInsteadOfWrapping) {
  EXPECT_EQ(sat::add(kMax, 1), kMax);
  EXPECT_EQ(sat::add(sat::kMin, -1), sat::kMin);
  EXPECT_EQ(sat::sub(sat::kMin, 1), sat::kMin);
  EXPECT_EQ(sat::sub(0, sat::kMin), kMax);
  EXPECT_EQ(sat::mul(kMax / 2, 3), kMax);
  EXPECT_EQ(sat::mul(kMax / 2, -3), sat::kMin);
  EXPECT_EQ(sat::neg(sat::kMin), kMax);
  EXPECT_EQ(sat::fromDouble(1e30), kMax);
  EXPECT_EQ(sat::fromDouble(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(sat::add(40, 2), 42);
  EXPECT_EQ(sat::midpoint(kMax, kMax - 2), kMax - 1);
  EXPECT_EQ(sat::midpoint(-3, 4), 0);  // as (-3 + 4) / 2
  EXPECT_EQ(sat::midpoint(sat::kMin, sat::kMin), sat::kMin);
}

// The chain trace of the other tests with every size and time scaled up until
// sums of them pass INT64_MAX.
Trace hugeTrace(Bytes bytes_scale, Ns time_scale) {
  testing::ChainSpec spec;
  spec.units = 4;
  spec.steps = 3;
  spec.params = 4;
  spec.transient = 1;
  spec.saved = 3;
  spec.output = 2;
  spec.grad = 1;
  Trace t = testing::chainTrace(spec);
  for (Allocation& a : t.allocations) {
    a.bytes = sat::mul(a.bytes, bytes_scale);
    a.alloc = sat::mul(a.alloc, time_scale);
    if (a.free >= 0) a.free = sat::mul(a.free, time_scale);
  }
  for (Range& r : t.ranges) {
    r.start = sat::mul(r.start, time_scale);
    r.end = sat::mul(r.end, time_scale);
  }
  for (Step& s : t.steps) {
    s.start = sat::mul(s.start, time_scale);
    s.end = sat::mul(s.end, time_scale);
    s.peak = kMax;
  }
  for (int s = 0; s < spec.steps; ++s) t.scalars.push_back({s, "loss", 1.0});
  return t;
}

void expectSane(const PlanOutcome& o, const std::string& what) {
  EXPECT_GE(o.peak, 0) << what;
  EXPECT_GE(o.recompute_ns, 0) << what;
  EXPECT_GE(o.step_ns, 0) << what;
}

// Everything the CLI does with a trace: advise, plan file, verify, reports,
// chrome trace. Advice may refuse (AdviceError), but must not wrap.
void runEverything(const Trace& t, const std::string& tag) {
  MemoryCurve curve = memoryCurve(t);
  EXPECT_GE(curve.peak, 0) << tag;
  for (const StepPeak& p : stepPeaks(t, curve)) EXPECT_GE(p.peak, 0) << tag;
  for (const ModuleStats& m : moduleStats(t)) EXPECT_GE(m.saved_bytes, 0) << tag << " " << m.name;
  EXPECT_GE(medianStepNs(t), 0) << tag;
  EXPECT_FALSE(chromeTrace(t).dump().empty());

  AdviceRequest req;
  req.budget = Budget::share(0.6);
  for (Strategy s : {Strategy::Optimal, Strategy::Every, Strategy::Uniform}) {
    req.strategy = s;
    try {
      Advice a = advise(t, req);
      expectSane(a.baseline, tag + " baseline");
      expectSane(a.chosen, tag + " chosen");
      EXPECT_GE(a.budget, 0) << tag;
      nlohmann::json plan_json = planJson(a);
      PlanFile plan = parsePlan(plan_json, tag);
      Trace measured = t;
      measured.run.baseline_run = t.run.id;
      Verification v = verify(t, measured, plan, 1, 0);
      EXPECT_FALSE(toJson(v).dump().empty());
      (void)predictedSlowdown(v);
      (void)measuredSlowdown(v);

      std::string db = ::testing::TempDir() + "gcprof-extreme-" + tag + ".db";
      std::remove(db.c_str());
      int64_t base_run = testing::writeTrace(db, t);
      TraceStore store(db, TraceStore::Mode::ReadWrite);
      int64_t plan_id = store.savePlan({0, base_run, 1, "optimal", a.budget, plan_json.dump()});
      measured.run.plan_id = plan_id;
      measured.run.baseline_run = base_run;
      int64_t run = testing::writeTrace(db, measured);
      v.plan_id = plan_id;
      v.baseline_run = base_run;
      v.run = run;
      store.saveVerification({0, plan_id, base_run, run, v.verdict, 2, toJson(v).dump()});
      ReportData r = loadReport(store, 0);
      EXPECT_FALSE(markdownReport(r).empty());
      EXPECT_FALSE(htmlReport(r).empty());
      EXPECT_FALSE(junitReport(r).empty());
      EXPECT_FALSE(reportJson(r).dump().empty());
      std::remove(db.c_str());
    } catch (const AdviceError&) {
      // A clear refusal is a fine answer to an absurd trace.
    }
  }
}

TEST(ExtremeValues, HugeSizesDoNotWrap) { runEverything(hugeTrace(kMax / 8, 1), "bytes"); }

TEST(ExtremeValues, HugeTimesDoNotWrap) {
  runEverything(hugeTrace(1 << 20, kMax / 1500), "times");
}

TEST(ExtremeValues, BothAtTheLimit) { runEverything(hugeTrace(kMax, kMax), "both"); }

TEST(ExtremeValues, SizesThatSumPastTheLimitGiveAClampedPeak) {
  testing::TraceBuilder b;
  b.alloc(0, -1, kMax / 2);
  b.alloc(1, -1, kMax / 2);
  b.alloc(2, 3, kMax / 2);
  MemoryCurve c = memoryCurve(b.build());
  EXPECT_EQ(c.peak, kMax);
}

}  // namespace
}  // namespace gcprof::advisor

namespace gcprof::advisor {
namespace {

// A CPU step of U-Net took 7.1 s: the verification read the plan's predicted
// step time back as a 32-bit int (-1458889495 ns in the report).
TEST(ExtremeValues, StepTimesPastTwoSecondsSurviveTheVerificationRecord) {
  Verification v;
  v.verdict = "PASS";
  v.checkpoint = {{"down.0"}};
  v.baseline_step_ns = 6822097640;
  v.predicted_step_ns = 7131045097;
  v.predicted_recompute_ns = 3089474570;
  v.measured_step_ns = 3318373999;
  Verification back = fromJson(toJson(v));
  EXPECT_EQ(back.predicted_step_ns, 7131045097);
  EXPECT_EQ(back.predicted_recompute_ns, 3089474570);
  EXPECT_EQ(back.baseline_step_ns, 6822097640);
}

}  // namespace
}  // namespace gcprof::advisor
