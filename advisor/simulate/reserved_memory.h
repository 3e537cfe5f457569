// Reserved memory of a sequence of tensor events: each device's caching
// allocator (simulate/caching_allocator.h) fed the allocations and frees in
// the order the replay simulator orders them. An allocation may be live
// more than once at a time (its recorded copy and a recomputed one); a free
// releases the latest copy, which has the same size, so which one goes does
// not change the bytes.
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "simulate/caching_allocator.h"
#include "trace.h"

namespace gcprof::advisor {

class ReservedMemory {
 public:
  // `trace` holds the allocations given: each one's stream (a segment's
  // blocks serve one stream).
  ReservedMemory(AllocatorSettings settings, const Trace& trace) : settings_(std::move(settings)), trace_(trace) {}

  void allocate(const Allocation& a, Bytes bytes);
  // A free of a copy never allocated (a free the simulator cancels before
  // the allocation it frees) is ignored.
  void release(const Allocation& a);

  Bytes reserved() const { return reserved_; }        // every device together
  Bytes allocatedBlocks() const { return allocated_; }  // as torch counts allocated: rounded blocks
  int64_t segments() const;

 private:
  CachingAllocatorModel& device(int d);

  AllocatorSettings settings_;
  const Trace& trace_;
  std::map<int, CachingAllocatorModel> devices_;
  std::unordered_map<const Allocation*, std::vector<CachingAllocatorModel::BlockId>> live_;
  Bytes reserved_ = 0, allocated_ = 0;
};

}  // namespace gcprof::advisor
