// make_report_trace OUT.db pass|fail|nosteps|huge: a trace with a baseline run, an
// advised plan, a verification run and a verification record, for the
// report/export tests. The verification's numbers are made up here (the
// report only renders them); `fail` makes the budget gate fail; `nosteps`
// passes but its baseline has no step markers (a C API / NVTX job); `huge`
// has sizes whose sums pass INT64_MAX (the CLI must not overflow on them).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "chain_traces.h"
#include "plan/advice.h"
#include "plan/plan_file.h"
#include "saturating.h"
#include "trace_file.h"
#include "trace_store.h"
#include "verify/verification.h"

using namespace gcprof;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_report_trace OUT.db pass|fail|nosteps|huge\n");
    return 2;
  }
  bool no_steps = std::strcmp(argv[2], "nosteps") == 0;
  bool huge = std::strcmp(argv[2], "huge") == 0;
  bool pass = no_steps || huge || std::strcmp(argv[2], "pass") == 0;
  testing::ChainSpec spec;
  spec.units = 8;
  spec.steps = 3;
  spec.params = 64 << 20;
  spec.transient = 8 << 20;
  spec.saved = 24 << 20;
  spec.output = 4 << 20;
  spec.grad = 1 << 20;
  if (huge) {
    Bytes e = INT64_MAX / 16;  // the whole chain's memory is far beyond INT64_MAX
    spec.params = 2 * e;
    spec.transient = e;
    spec.saved = 3 * e;
    spec.output = e;
    spec.grad = e / 2;
  }
  Trace base = testing::chainTrace(spec);
  for (int s = 0; s < spec.steps; ++s) base.scalars.push_back({s, "loss", 7.0 - 0.1 * s});
  std::remove(argv[1]);
  Trace stored_base = base;
  if (no_steps) stored_base.steps.clear();
  int64_t base_run = testing::writeTrace(argv[1], stored_base);

  advisor::AdviceRequest req;
  req.budget = advisor::Budget::share(0.6);
  advisor::Advice a = advisor::advise(base, req);
  nlohmann::json plan = advisor::planJson(a);
  TraceStore store(argv[1], TraceStore::Mode::ReadWrite);
  int64_t plan_id = store.savePlan({0, base_run, 1, "optimal", a.budget, plan.dump()});

  Trace measured = base;
  measured.run.baseline_run = base_run;
  measured.run.plan_id = plan_id;
  int64_t run = testing::writeTrace(argv[1], measured);

  advisor::Verification v;
  v.strategy = "optimal";
  v.checkpoint = plan["checkpoint"].get<std::vector<std::vector<std::string>>>();
  v.budget = pass ? a.budget : a.chosen.peak / 2;
  v.plan_id = plan_id;
  v.baseline_run = base_run;
  v.run = run;
  v.baseline_peak = a.baseline.peak;
  v.predicted_peak = a.chosen.peak;
  v.measured_peak = sat::add(a.chosen.peak, a.chosen.peak / 100);
  v.baseline_step_ns = a.baseline.step_ns;
  v.predicted_step_ns = a.chosen.step_ns;
  v.measured_step_ns = a.chosen.step_ns + 7;
  v.predicted_recompute_ns = a.chosen.recompute_ns;
  v.loss_tolerance = 1e-6;
  for (int s = 0; s < spec.steps; ++s) v.losses.push_back({s, 7.0 - 0.1 * s, 7.0 - 0.1 * s});
  v.gates = {{"job completed", true, "the verification run exited with 0"},
             {"peak within budget", v.measured_peak <= v.budget, "measured vs budget <&> \"quoted\""},
             {"peak prediction", true, "1.0% off (tolerance 5%)"},
             {"losses match", true, "3 steps compared, 0 differ"}};
  v.verdict = pass ? "PASS" : "FAIL";
  store.saveVerification({0, plan_id, base_run, run, v.verdict, 2, advisor::toJson(v).dump()});
  return 0;
}
