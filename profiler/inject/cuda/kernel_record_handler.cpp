#include "kernel_record_handler.h"

#include "recorder.h"

namespace gcprof::inject::cuda {

void KernelRecordHandler::handle(const KernelRecord& record) {
  if (record.start == 0 || record.end < record.start) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint64_t range = correlations_.launchRange(record.correlationId);
  recordKernel(record.name ? record.name : "<unnamed kernel>", static_cast<int>(record.deviceId),
               record.streamId, clock_.toHost(record.start), clock_.toHost(record.end),
               record.correlationId, range);
  recorded_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gcprof::inject::cuda
