// Allocations as a time-ordered list of +bytes / -bytes events, the one
// ordering every memory computation of the advisor shares.
#pragma once

#include <vector>

#include "model/memory_curve.h"
#include "trace.h"

namespace gcprof::advisor {

struct MemoryEvent {
  Ns time = 0;
  Bytes delta = 0;  // +bytes at allocation, -bytes at free
};

// Order at equal times: frees before allocations, because an address freed
// and reused within one clock tick never held both buffers at once.
// Allocations freed at the instant they were made never count.
std::vector<MemoryEvent> memoryEvents(const std::vector<Allocation>& allocations,
                                      const AllocationFilter& filter);

// The most bytes `events` (in any order; sorted here as above) hold at once,
// counted at the end of each instant, starting from nothing.
Bytes eventsPeak(std::vector<MemoryEvent>& events);

}  // namespace gcprof::advisor
