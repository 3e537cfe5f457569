#include "allocator_events.h"

namespace gcprof::allocator_trace {

bool deliver(const AllocatorRecord& r, DeviceMemorySink& sink, bool with_segments) {
  auto bytes = static_cast<int64_t>(r.size);
  auto stream = static_cast<int64_t>(r.stream);
  switch (r.action) {
    case Action::Alloc:
      sink.allocate(r.addr, bytes, r.device, stream, kTensor);
      return true;
    case Action::FreeRequested:
      sink.release(r.addr, r.device, kTensor);
      return true;
    case Action::SegmentAlloc:
    case Action::SegmentMap:
      if (!with_segments) return false;
      sink.allocate(r.addr, bytes, r.device, stream, kSegment);
      return true;
    case Action::SegmentFree:
    case Action::SegmentUnmap:
      if (!with_segments) return false;
      sink.release(r.addr, r.device, kSegment);
      return true;
    case Action::FreeCompleted:
    case Action::Other:
      return false;
  }
  return false;
}

}  // namespace gcprof::allocator_trace
