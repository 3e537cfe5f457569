#include "job.h"

#include <algorithm>
#include <map>

namespace gcprof {

const RunInfo* Job::rank(int r) const {
  for (const RunInfo& run : ranks)
    if (run.rank == r) return &run;
  return nullptr;
}

Job jobOf(TraceStore& store, int64_t id) {
  RunInfo run = store.run(id);
  Job job;
  job.launcher = run.job_run > 0 ? store.run(run.job_run) : run;
  std::map<int, RunInfo> by_rank;
  for (const RunInfo& r : store.runs()) {
    if (r.job_run != job.launcher.id) continue;
    if (r.rank < 0) {
      job.nodes.push_back(r);
      continue;
    }
    auto [it, fresh] = by_rank.emplace(r.rank, r);
    if (!fresh && r.id > it->second.id) it->second = r;
  }
  for (auto& [rank, r] : by_rank) job.ranks.push_back(r);
  return job;
}

std::string rankName(const RunInfo& run) {
  return "rank " + std::to_string(run.rank) + " (run " + std::to_string(run.id) + ")";
}

}  // namespace gcprof
