// The device time of each range: the kernels launched inside it or inside
// any range below it (CUDA runs). Computed once a run has ended, and kept in
// `range_device_time` (schema version 5): a range's batch is never updated.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "trace.h"

namespace gcprof {

// A kernel as attribution needs it: the range it was launched in (0 = none)
// and its duration.
struct KernelSpan {
  int64_t range = 0;
  Ns duration = 0;
};

// (range id, device time) for every range of `ranges` that encloses a
// kernel, in id order. A kernel counts for its range and each parent up the
// chain; a parent id that is no range of the run ends the chain.
std::vector<std::pair<int64_t, Ns>> kernelTimeByRange(const std::vector<Range>& ranges,
                                                      const std::vector<KernelSpan>& kernels);

}  // namespace gcprof
