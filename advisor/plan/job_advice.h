// `gcprof advise` on a multi-process job (torchrun, DDP, FSDP): every rank
// runs the same model code, so one plan applies to all of them; it must fit
// the budget on the worst rank. Each rank is advised on its own trace, each
// rank's answer is simulated on every other rank, and the plan with the least
// recomputation on its slowest rank among those that fit everywhere wins.
// Ranks that differ (rank 0 holding extra buffers, uneven FSDP shards) show
// in the per-rank outcomes. docs/distributed.md.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "plan/advice.h"

namespace gcprof::advisor {

struct RankOutcome {
  RunInfo run;          // the rank's run
  Bytes recorded_peak = 0;
  Ns recorded_step_ns = 0;
  PlanOutcome planned;  // the job's plan simulated on this rank's trace
};

struct JobAdvice {
  RunInfo launcher;
  std::vector<Advice> ranks;         // each rank's own advice, by rank
  std::vector<RankOutcome> outcomes; // the chosen plan on each rank, by rank
  int worst = 0;                     // index of the rank with the highest predicted peak
  int source = 0;                    // index of the rank whose solution was chosen
  // The worst rank's advice with the job's plan as its answer: what the plan
  // file, the human output and `verify` use as the job's prediction.
  Advice summary;
  bool feasible = true;
  std::string message;
};

// `ranks` are the rank traces of one job, by rank. Throws AdviceError when
// the ranks do not share their units (not the same model code).
JobAdvice adviseJob(const RunInfo& launcher, const std::vector<Trace>& ranks,
                    const AdviceRequest& request);

// The plan file of a job: planJson(summary) for the launcher run, plus
// "ranks": [{rank, run, recorded and predicted peak, recompute, step}].
nlohmann::json jobPlanJson(const JobAdvice& advice);

}  // namespace gcprof::advisor
