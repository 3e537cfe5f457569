// MEMORY2 activity records -> allocation events, for device memory the API
// callbacks did not already record: allocations made through calls we do not
// subscribe to (cudaMallocPitch, graph memory nodes, libraries' own driver
// paths). Records whose correlation id a callback already recorded are
// skipped, so nothing is counted twice. These records arrive late on CUPTI's
// thread: they carry the device timestamp (mapped to the host clock) but no
// range, since the calling thread's range is no longer known.
#pragma once

#include <atomic>
#include <cstdint>

#include "activity_records.h"
#include "clock_mapping.h"
#include "correlation_ranges.h"

namespace gcprof::inject::cuda {

class MemoryRecordHandler {
 public:
  MemoryRecordHandler(const CorrelationRanges& correlations, const ClockMapping& clock)
      : correlations_(correlations), clock_(clock) {}

  void handle(const MemoryRecord& record);

  int64_t recorded() const { return recorded_.load(std::memory_order_relaxed); }
  int64_t alreadyRecorded() const { return already_.load(std::memory_order_relaxed); }

 private:
  const CorrelationRanges& correlations_;
  const ClockMapping& clock_;
  std::atomic<int64_t> recorded_{0};
  std::atomic<int64_t> already_{0};
};

}  // namespace gcprof::inject::cuda
