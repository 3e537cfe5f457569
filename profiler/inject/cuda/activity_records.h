// The CUPTI activity record layouts we read. We compile against the newest
// headers but may run on an older libcupti, whose records are an older
// version of the same struct; we only read fields whose offsets have not
// moved since the oldest version we accept (checked below), so the newest
// struct works for all of them.
#pragma once

#include <cupti.h>

#include <cstddef>

namespace gcprof::inject::cuda {

using KernelRecord = CUpti_ActivityKernel10;  // CUPTI_ACTIVITY_KIND_(CONCURRENT_)KERNEL
using MemoryRecord = CUpti_ActivityMemory4;   // CUPTI_ACTIVITY_KIND_MEMORY2

#define GCPROF_SAME_OFFSET(newer, older, field) \
  static_assert(offsetof(newer, field) == offsetof(older, field), #field " moved in " #newer)
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, start);
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, end);
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, deviceId);
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, streamId);
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, correlationId);
GCPROF_SAME_OFFSET(KernelRecord, CUpti_ActivityKernel4, name);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, memoryOperationType);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, memoryKind);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, correlationId);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, address);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, bytes);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, timestamp);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, deviceId);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, streamId);
GCPROF_SAME_OFFSET(MemoryRecord, CUpti_ActivityMemory3, isAsync);
#undef GCPROF_SAME_OFFSET

// CUPTI 18 = CUDA 11.8: MEMORY2 records and the stream-ordered allocator's
// callbacks exist, and the fields above sit where we read them.
constexpr uint32_t kMinCuptiVersion = 18;

}  // namespace gcprof::inject::cuda
