#include "memory_record_handler.h"

#include "recorder.h"
#include "trace.h"

namespace gcprof::inject::cuda {

void MemoryRecordHandler::handle(const MemoryRecord& record) {
  // Pinned and managed memory are host-visible; the host backend and the
  // device peak are about device memory only.
  if (record.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || record.address == 0) return;
  if (correlations_.memoryCallRecorded(record.correlationId)) {
    already_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int device = static_cast<int>(record.deviceId);
  const Ns time = clock_.toHost(record.timestamp);
  switch (record.memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION: {
      // Stream-ordered (pool) allocations are per object, like tensors under
      // backend:cudaMallocAsync; the rest are whole allocator segments.
      const bool pooled = record.isAsync != 0;
      const auto api = pooled ? AllocApi::CudaMallocAsync : AllocApi::CuMemAlloc;
      const auto kind = pooled ? AllocKind::Tensor : AllocKind::Segment;
      recordAlloc(record.address, static_cast<int64_t>(record.bytes), static_cast<int>(api), device,
                  record.streamId, static_cast<int>(kind), /*force=*/true, time);
      recorded_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      // Memory allocated before recording began is unknown to the recorder,
      // which counts and drops such frees.
      recordFree(record.address, device, time,
                 static_cast<int>(record.isAsync != 0 ? AllocKind::Tensor : AllocKind::Segment));
      recorded_.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}

}  // namespace gcprof::inject::cuda
