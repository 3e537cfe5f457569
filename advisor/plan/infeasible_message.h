// What advise says when its plan does not fit: the least peak any plan
// reaches, what no checkpoint can free, and the budget that would do.
#pragma once

#include <string>

#include "plan/advice.h"

namespace gcprof::advisor {

// Why no plan fits the budget, with what would. Fills a.minimum (the
// least-peak plan), a.min_reachable_peak and a.least_budget.
std::string infeasibleMessage(const Trace& trace, Advice& a, const SolverOptions& opts);

// The chosen plan fits the budget but recomputes more than --max-slowdown allows.
std::string slowdownMessage(const Advice& a);

}  // namespace gcprof::advisor
