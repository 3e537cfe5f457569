// Live bytes over time of one run, in the memory space that matters: device
// memory on CUDA runs, host memory otherwise. The same event order (frees
// before allocations at equal times) is used by the replay simulator, so a
// plan that changes nothing reproduces this curve's peak exactly.
#pragma once

#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

// Which allocations count. Device memory is read at tensor level when the
// caching allocator reported tensors, else at segment level (cudaMalloc):
// counting both would count the same bytes twice.
struct AllocationFilter {
  bool device = false;
  AllocKind kind = AllocKind::Tensor;  // device only; host counts every kind
  int api = -1;                        // device only: one AllocApi, -1 every one

  bool matches(const Allocation& a) const {
    if (!device) return a.device < 0;
    return a.device >= 0 && a.kind == static_cast<int>(kind) && (api < 0 || a.api == api);
  }
  // Matched and makes memory events: not empty, and not freed at the
  // instant it was made (such a block never counts in any curve or peak).
  bool counts(const Allocation& a) const {
    return matches(a) && a.bytes > 0 && !(a.freed() && a.free <= a.alloc);
  }
  std::string describe() const;  // "host", "device tensors", "device segments"
};

// Device memory when the run has any, host memory otherwise.
AllocationFilter primaryFilter(const Trace& trace);
AllocationFilter hostFilter();

struct MemoryPoint {
  Ns time = 0;
  Bytes live = 0;  // after every event at `time`
};

struct MemoryCurve {
  AllocationFilter filter;
  std::vector<MemoryPoint> points;  // one per distinct event time, by time
  Bytes peak = 0;
  Ns peak_time = 0;
  Bytes live_at_end = 0;            // still allocated when the run ended
};

// The live-bytes curve of every allocation of the run that `filter` accepts.
// Allocations never freed stay live to the end.
MemoryCurve memoryCurve(const Trace& trace, const AllocationFilter& filter);
MemoryCurve memoryCurve(const Trace& trace);  // primaryFilter

struct StepPeak {
  int64_t step = 0;
  Ns start = 0;
  Ns end = 0;
  Bytes peak = 0;        // highest live bytes within [start, end], entry level included
  Ns peak_time = 0;
  Bytes live_at_start = 0;
};

// The peak of each recorded step, by step index.
std::vector<StepPeak> stepPeaks(const Trace& trace, const MemoryCurve& curve);

// Live bytes just after every event at or before `t` (0 before the first).
Bytes liveAt(const MemoryCurve& curve, Ns t);

// At most `max_points` points keeping each bucket's maximum, for charts.
std::vector<MemoryPoint> downsample(const std::vector<MemoryPoint>& points, size_t max_points);

}  // namespace gcprof::advisor
