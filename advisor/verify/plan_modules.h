// Before a verification re-runs a job: every module a plan checkpoints must
// be a module of the recorded run. A plan naming one the model does not have
// would only fail inside the job, after its start-up; this says so at once,
// with the nearest recorded names. Nor may it checkpoint a module the
// recording saw change its input in place (a hand-edited plan: advise leaves
// those out), which would run and then crash in backward.
#pragma once

#include <string>

#include "plan/plan_file.h"
#include "trace.h"

namespace gcprof::advisor {

// Throws StoreError "WHERE: unit 'X' is not a module of run N (near: a, b, c)",
// or naming the in-place module a plan checkpoints.
void checkPlanModulesExist(const PlanFile& plan, const Trace& baseline, const std::string& where);

}  // namespace gcprof::advisor
