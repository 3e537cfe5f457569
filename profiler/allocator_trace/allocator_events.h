// PyTorch's native CUDA caching allocator, observed rather than replaced:
// what its trace trackers are told (c10 TraceEntry, one per allocator event)
// turned into the trace's device allocations. Tensor events (ALLOC,
// FREE_REQUESTED) become tensor allocations; segment events (SEGMENT_ALLOC /
// SEGMENT_MAP, SEGMENT_FREE / SEGMENT_UNMAP) segment allocations. Free of a
// tensor is taken at FREE_REQUESTED, where torch.cuda.memory_allocated drops;
// FREE_COMPLETED (later only for blocks used on other streams, record_stream)
// says when the block may be handed out again and is not a free of its own.
// Pure: the tracker (c10_tracker.cpp) and the tests feed it.
#pragma once

#include <cstdint>

namespace gcprof::allocator_trace {

enum class Action { Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Other };

struct AllocatorRecord {
  Action action = Action::Other;
  int device = 0;
  uint64_t addr = 0;
  uint64_t size = 0;    // requested bytes for tensors, mapped bytes for segments
  uint64_t stream = 0;  // cudaStream_t as a number (0: the default stream)
};

// Where translated events go: the injector's C API in a job, a recording
// double in the tests. Called under the allocator's lock: must not block.
class DeviceMemorySink {
 public:
  virtual ~DeviceMemorySink() = default;
  virtual void allocate(uint64_t addr, int64_t bytes, int device, int64_t stream, int kind) = 0;
  virtual void release(uint64_t addr, int device, int kind) = 0;
};

// AllocKind values (profiler/store/trace.h).
constexpr int kTensor = 0;
constexpr int kSegment = 1;

// False for records that are no memory event (FREE_COMPLETED, snapshots,
// OOM, annotations) and, without `with_segments`, for segment records.
bool deliver(const AllocatorRecord& record, DeviceMemorySink& sink, bool with_segments);

}  // namespace gcprof::allocator_trace
