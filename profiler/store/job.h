// A recorded job: the run of the process `gcprof record` (or `verify`)
// started, and the runs of the ranks a launcher such as torchrun spawned
// under it (docs/distributed.md). A single-process job has no ranks.
#pragma once

#include <string>
#include <vector>

#include "trace_store.h"

namespace gcprof {

struct Job {
  RunInfo launcher;            // the process we started (torchrun, or the job itself)
  std::vector<RunInfo> ranks;  // runs with a RANK, by rank; empty when not distributed
  std::vector<RunInfo> nodes;  // other nodes' launchers merged in (`gcprof merge`)

  bool distributed() const { return !ranks.empty(); }
  const RunInfo* rank(int r) const;  // nullptr when that rank made no run
};

// The job `run` belongs to: a rank's or node's launcher, or the run itself.
// When a rank was restarted (torchrun --max-restarts), its newest run counts.
Job jobOf(TraceStore& store, int64_t run);

// "rank 1 (run 7)": how messages name a rank.
std::string rankName(const RunInfo& run);

}  // namespace gcprof
