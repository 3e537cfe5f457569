// A c10 TraceEntry as an AllocatorRecord. Header-only so that the tests build
// it against the same c10 headers as the tracker; needs only c10/core (no
// CUDA headers).
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

#include "allocator_events.h"

namespace gcprof::allocator_trace {

inline Action actionOf(c10::CachingDeviceAllocator::TraceEntry::Action a) {
  using E = c10::CachingDeviceAllocator::TraceEntry;
  switch (a) {
    case E::ALLOC: return Action::Alloc;
    case E::FREE_REQUESTED: return Action::FreeRequested;
    case E::FREE_COMPLETED: return Action::FreeCompleted;
    case E::SEGMENT_ALLOC: return Action::SegmentAlloc;
    case E::SEGMENT_FREE: return Action::SegmentFree;
    case E::SEGMENT_MAP: return Action::SegmentMap;
    case E::SEGMENT_UNMAP: return Action::SegmentUnmap;
    default: return Action::Other;
  }
}

inline AllocatorRecord recordOf(const c10::CachingDeviceAllocator::TraceEntry& e) {
  AllocatorRecord r;
  r.action = actionOf(e.action_);
  r.device = static_cast<int>(e.device_);
  r.addr = static_cast<uint64_t>(e.addr_);
  r.size = static_cast<uint64_t>(e.size_);
  r.stream = reinterpret_cast<uint64_t>(e.stream_);
  return r;
}

}  // namespace gcprof::allocator_trace
