#include "verify/job_verification.h"

#include <algorithm>

#include "byte_text.h"
#include "job.h"

namespace gcprof::advisor {
namespace {

// The plan's prediction for one rank; a plan made on one rank only carries
// its global prediction, which then stands for every rank.
PlanFile planForRank(const PlanFile& plan, int rank) {
  PlanFile p = plan;
  for (const auto& r : plan.json.value("ranks", nlohmann::json::array())) {
    if (r.value("rank", -2) != rank || !r.contains("predicted")) continue;
    p.predicted_peak = r["predicted"].value("peak_bytes", plan.predicted_peak);
    p.predicted_recompute_ns = r["predicted"].value("recompute_ns", plan.predicted_recompute_ns);
    p.predicted_step_ns = r["predicted"].value("step_ns", plan.predicted_step_ns);
  }
  return p;
}

// How a rank's process ended, from its run (exit codes come from the
// injector's exit hooks; a signal leaves "interrupted").
std::string howItEnded(const RunInfo& run, size_t steps, size_t baseline_steps) {
  std::string s = rankName(run);
  if (run.status == "failed") s += " failed with exit " + std::to_string(run.exit_code);
  else if (run.status == "interrupted") s += " was stopped by a signal";
  else if (run.status == "running") s += " never finished (killed, or still running)";
  else s += " completed";
  return s + " after " + std::to_string(steps) + " of " + std::to_string(baseline_steps) + " steps";
}

// The rank that ended the job: one that failed by itself before those that
// were stopped because of it (torchrun stops the others when one dies).
std::string culpritOf(const std::vector<RankVerification>& ranks, bool timed_out,
                      const std::vector<std::string>& endings) {
  for (const char* wanted : {"failed", "missing", "running", "interrupted"}) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      const RankVerification& r = ranks[i];
      bool match = std::string(wanted) == "missing" ? r.run == 0 : (r.run != 0 && r.status == wanted);
      if (!match) continue;
      std::string why = endings[i];
      if (timed_out) why += "; the job was ended by the verify timeout";
      return why;
    }
  }
  return timed_out ? "the job was ended by the verify timeout" : "";
}

}  // namespace

JobVerification verifyJob(const std::vector<Trace>& baseline,
                          const std::vector<std::optional<Trace>>& measured, const PlanFile& plan,
                          int64_t plan_id, int64_t baseline_launcher, int64_t launcher_run,
                          int launcher_exit_code, bool timed_out) {
  JobVerification job;
  std::vector<std::string> endings;
  for (size_t i = 0; i < baseline.size(); ++i) {
    const Trace& base = baseline[i];
    RankVerification r;
    r.rank = base.run.rank;
    r.baseline_run = base.run.id;
    if (i < measured.size() && measured[i]) {
      const Trace& m = *measured[i];
      r.run = m.run.id;
      r.status = m.run.status;
      r.exit_code = m.run.exit_code;
      // A rank's own exit: 0 when it completed, whatever ended its peers.
      int code = m.run.status == "complete" ? 0 : (m.run.exit_code != 0 ? m.run.exit_code : 128);
      r.result = verify(base, m, planForRank(plan, r.rank), plan_id, code);
      r.result.gates.front().name = "rank completed";
      r.result.gates.front().detail = howItEnded(m.run, m.steps.size(), base.steps.size());
      endings.push_back(r.result.gates.front().detail);
    } else {
      r.status = "missing";
      r.result.verdict = "FAIL";
      r.result.baseline_run = base.run.id;
      std::string what = "rank " + std::to_string(r.rank) + " made no run in the re-run (it died or "
                         "hung before its first step, or was never started)";
      r.result.gates.push_back({"rank completed", false, what});
      endings.push_back(what);
    }
    job.ranks.push_back(r);
  }
  // The summary carries the worst rank's numbers and every rank's gates.
  size_t worst = 0;
  for (size_t i = 0; i < job.ranks.size(); ++i)
    if (job.ranks[i].result.measured_peak > job.ranks[worst].result.measured_peak) worst = i;
  Verification& s = job.summary;
  s = job.ranks.empty() ? Verification{} : job.ranks[worst].result;
  s.plan_id = plan_id;
  s.strategy = plan.strategy;
  s.checkpoint = plan.checkpoint;
  s.budget = plan.budget_bytes;
  s.baseline_run = baseline_launcher;
  s.run = launcher_run;
  s.exit_code = launcher_exit_code;
  if (s.predicted_peak == 0) s.predicted_peak = plan.predicted_peak;
  s.gates.clear();
  std::string launcher = "the launcher exited with " + std::to_string(launcher_exit_code);
  if (timed_out) launcher += " after the verify timeout ended it";
  s.gates.push_back({"job completed", launcher_exit_code == 0 && !timed_out, launcher});
  for (const RankVerification& r : job.ranks)
    for (const Gate& g : r.result.gates)
      s.gates.push_back({"rank " + std::to_string(r.rank) + ": " + g.name, g.passed, g.detail});
  bool pass = std::all_of(s.gates.begin(), s.gates.end(), [](const Gate& g) { return g.passed; });
  s.verdict = pass ? "PASS" : "FAIL";
  if (!pass) job.culprit = culpritOf(job.ranks, timed_out, endings);
  return job;
}

nlohmann::json toJson(const JobVerification& v) {
  nlohmann::json doc = toJson(v.summary);
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankVerification& r : v.ranks) {
    nlohmann::json one = toJson(r.result);
    one["rank"] = r.rank;
    one["status"] = r.status;
    one["exit_code"] = r.exit_code;
    one["baseline"]["run"] = r.baseline_run;
    one["measured"]["run"] = r.run;
    ranks.push_back(one);
  }
  doc["ranks"] = ranks;
  if (!v.culprit.empty()) doc["culprit"] = v.culprit;
  return doc;
}

}  // namespace gcprof::advisor
