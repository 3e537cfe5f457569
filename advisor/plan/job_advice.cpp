#include "plan/job_advice.h"

#include <algorithm>

#include "byte_text.h"
#include "job.h"
#include "advice_error.h"
#include "plan/plan_file.h"

namespace gcprof::advisor {
namespace {

// A percent budget is of the job's recorded peak, i.e. of its worst rank.
AdviceRequest inBytes(const std::vector<Trace>& ranks, AdviceRequest req) {
  if (!req.budget || !req.budget->percent) return req;
  Bytes worst = 0;
  for (const Trace& t : ranks) {
    AdviceRequest recorded = req;
    recorded.strategy = Strategy::None;
    recorded.budget.reset();
    recorded.max_slowdown.reset();
    worst = std::max(worst, advise(t, recorded).baseline.peak);
  }
  req.budget->bytes = req.budget->resolve(worst);
  req.budget->percent = false;
  return req;
}

void requireSameUnits(const std::vector<Advice>& ranks) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].chain.names == ranks[0].chain.names) continue;
    throw AdviceError("ranks do not share their units: " + rankName(ranks[0].run) + " has " +
                      std::to_string(ranks[0].chain.size()) + " (" +
                      (ranks[0].units.names.empty() ? "" : ranks[0].units.names.front()) + ", ...), " +
                      rankName(ranks[r].run) + " has " + std::to_string(ranks[r].chain.size()) +
                      "; a plan applies to every rank, so they must run the same model code");
  }
}

struct Candidate {
  int source = 0;
  std::vector<PlanOutcome> on_rank;
  bool fits = true;
  Ns worst_recompute = 0;
  Bytes worst_peak = 0;
};

bool withinSlowdown(const Advice& a, const PlanOutcome& o) {
  return !a.max_slowdown ||
         static_cast<double>(o.recompute_ns) <= *a.max_slowdown * static_cast<double>(a.baseline.step_ns);
}

Candidate tryOnEveryRank(const std::vector<Trace>& traces, const std::vector<Advice>& ranks, int source) {
  Candidate c;
  c.source = source;
  const Advice& from = ranks[source];
  for (size_t r = 0; r < ranks.size(); ++r) {
    PlanOutcome o = static_cast<int>(r) == source
                        ? from.chosen
                        : outcomeOf(traces[r], ranks[r], from.chosen.name, from.chosen.segments);
    c.fits = c.fits && o.fits && withinSlowdown(ranks[r], o);
    c.worst_recompute = std::max(c.worst_recompute, o.recompute_ns);
    c.worst_peak = std::max(c.worst_peak, o.peak);
    c.on_rank.push_back(o);
  }
  return c;
}

bool better(const Candidate& a, const Candidate& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.fits) return a.worst_recompute < b.worst_recompute;
  return a.worst_peak < b.worst_peak;
}

}  // namespace

JobAdvice adviseJob(const RunInfo& launcher, const std::vector<Trace>& traces,
                    const AdviceRequest& request) {
  if (traces.empty()) throw AdviceError("run " + std::to_string(launcher.id) + ": the job has no ranks");
  JobAdvice job;
  job.launcher = launcher;
  AdviceRequest req = inBytes(traces, request);
  req.tree = false;  // plans over the module tree: single processes only (docs/plan.md)
  for (const Trace& t : traces) {
    try {
      job.ranks.push_back(advise(t, req));
    } catch (const AdviceError& e) {
      throw AdviceError(rankName(t.run) + ": " + e.what());
    }
  }
  requireSameUnits(job.ranks);
  Candidate best;
  for (size_t s = 0; s < job.ranks.size(); ++s) {
    Candidate c = tryOnEveryRank(traces, job.ranks, static_cast<int>(s));
    if (s == 0 || better(c, best)) best = c;
  }
  job.source = best.source;
  job.feasible = best.fits;
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const Advice& a = job.ranks[r];
    job.outcomes.push_back({a.run, a.baseline.peak, a.baseline.step_ns, best.on_rank[r]});
    if (best.on_rank[r].peak > best.on_rank[job.worst].peak) job.worst = static_cast<int>(r);
  }
  job.summary = job.ranks[job.worst];
  job.summary.chosen = best.on_rank[job.worst];
  job.summary.chosen.name = toString(job.summary.strategy);
  job.summary.feasible = job.feasible;
  if (!job.feasible) {
    // A rank the plan fails on says why (its smallest reachable peak): the
    // worst one, which the table marks, when it fails.
    auto fails = [&](size_t r) { return !best.on_rank[r].fits || !withinSlowdown(job.ranks[r], best.on_rank[r]); };
    size_t named = fails(job.worst) ? static_cast<size_t>(job.worst) : job.ranks.size();
    for (size_t r = 0; r < job.ranks.size() && named == job.ranks.size(); ++r)
      if (fails(r)) named = r;
    if (named < job.ranks.size()) {
      const Advice& a = job.ranks[named];
      job.message = rankName(a.run) + ": " +
                    (a.message.empty() ? "the plan chosen for the other ranks does not fit here" : a.message);
      // One budget for every rank: the least the neediest rank accepts.
      size_t needy = named;
      for (size_t r = 0; r < job.ranks.size(); ++r)
        if (job.ranks[r].least_budget > job.ranks[needy].least_budget) needy = r;
      if (needy != named)
        job.message += "\n  " + rankName(job.ranks[needy].run) + " needs more: raise the budget to at least " +
                       formatBytes(job.ranks[needy].least_budget) + " for the whole job.";
    }
    job.summary.message = job.message;
  }
  return job;
}

nlohmann::json jobPlanJson(const JobAdvice& job) {
  nlohmann::json doc = planJson(job.summary);
  doc["trace_run"] = job.launcher.id;
  doc["world_size"] = job.outcomes.size();
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankOutcome& r : job.outcomes) {
    ranks.push_back({{"rank", r.run.rank},
                     {"run", r.run.id},
                     {"recorded", {{"peak_bytes", r.recorded_peak}, {"step_ns", r.recorded_step_ns}}},
                     {"predicted",
                      {{"peak_bytes", r.planned.peak},
                       {"recompute_ns", r.planned.recompute_ns},
                       {"step_ns", r.planned.step_ns},
                       {"fits_budget", r.planned.fits}}}});
  }
  doc["ranks"] = ranks;
  return doc;
}

}  // namespace gcprof::advisor
