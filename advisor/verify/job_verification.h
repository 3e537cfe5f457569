// Verifying a multi-process job: each rank of the re-run is compared with
// the same rank of the baseline, against that rank's own prediction in the
// plan ("ranks" of a job plan, docs/plan.md). The job passes when every rank
// passes and the launcher (torchrun) exited 0; a rank that died, was stopped
// or never started fails it, by name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "verify/verification.h"

namespace gcprof::advisor {

struct RankVerification {
  int rank = -1;
  int64_t baseline_run = 0;
  int64_t run = 0;           // 0: this rank made no run in the re-run
  std::string status;        // the re-run rank's run status
  int exit_code = 0;
  Verification result;       // its gates; for a missing rank, one failed gate
};

struct JobVerification {
  Verification summary;      // the worst rank's numbers, every rank's gates ("rank 1: ...")
  std::vector<RankVerification> ranks;
  std::string culprit;       // "rank 1 (run 9) failed with exit 3 ..." when a rank ended the job
};

// `measured[i]` is the re-run of `baseline[i]`'s rank, or nullopt when that
// rank created no run. `launcher_run` is the re-run's launcher run.
JobVerification verifyJob(const std::vector<Trace>& baseline,
                          const std::vector<std::optional<Trace>>& measured, const PlanFile& plan,
                          int64_t plan_id, int64_t baseline_launcher, int64_t launcher_run,
                          int launcher_exit_code, bool timed_out);

// What `gcprof report --format json` and the verifications table hold: the
// summary's toJson plus "ranks" and "culprit".
nlohmann::json toJson(const JobVerification& v);

}  // namespace gcprof::advisor
