// Kernel activity records -> recorder kernels: device time on the host clock,
// tagged with the range that was open on the thread that launched them
// (looked up by correlation id), so a module's forward time on CUDA is the
// device time of its kernels, not the host time of asynchronous launches.
#pragma once

#include <atomic>
#include <cstdint>

#include "activity_records.h"
#include "clock_mapping.h"
#include "correlation_ranges.h"

namespace gcprof::inject::cuda {

class KernelRecordHandler {
 public:
  KernelRecordHandler(CorrelationRanges& correlations, const ClockMapping& clock)
      : correlations_(correlations), clock_(clock) {}

  void handle(const KernelRecord& record);

  int64_t recorded() const { return recorded_.load(std::memory_order_relaxed); }
  // Records without a usable start/end (CUPTI could not time the kernel).
  int64_t untimed() const { return untimed_.load(std::memory_order_relaxed); }

 private:
  CorrelationRanges& correlations_;
  const ClockMapping& clock_;
  std::atomic<int64_t> recorded_{0};
  std::atomic<int64_t> untimed_{0};
};

}  // namespace gcprof::inject::cuda
