// `gcprof merge out.db node0.db node1.db ...`: the traces each node of a
// multi-node job recorded (one torchrun per node), combined into one file in
// which they are one job: the first file's launcher run is the job's, the
// other nodes' launchers and ranks are linked to it. Run, plan and
// verification ids are renumbered; nothing else changes (times stay on each
// node's own clock). docs/distributed.md.
#pragma once

#include <string>
#include <vector>

namespace gcprof {

struct MergeResult {
  long long job_run = 0;  // the merged job's launcher run in `out`
  int ranks = 0;
  int runs = 0;
};

// Throws StoreError naming the file at fault: an input that is not a trace
// or holds no distributed job, two nodes claiming the same rank, an output
// that already exists.
MergeResult mergeTraces(const std::string& out, const std::vector<std::string>& inputs);

}  // namespace gcprof
