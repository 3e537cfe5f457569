// Allocations as a time-ordered list of +bytes / -bytes events, the one
// ordering every memory computation of the advisor shares.
#pragma once

#include <vector>

#include "memory/memory_curve.h"
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

// The memory curve of events already sorted as memoryEvents sorts them
// (memoryCurve(trace, filter) is this of memoryEvents(trace.allocations, filter)).
MemoryCurve memoryCurveOf(const std::vector<MemoryEvent>& events, const AllocationFilter& filter);

// stepPeaks(trace, memoryCurveOf(events, ...)) without the curve (two
// points per allocation): the same values from the events themselves.
std::vector<StepPeak> stepPeaksOf(const std::vector<MemoryEvent>& events, const std::vector<Step>& steps);

// The live bytes before events[i]: the sum of the deltas before it, walked
// on from the last question (callers ask in time order, step after step;
// summing from the start each time made a run of many steps quadratic).
class LevelBefore {
 public:
  explicit LevelBefore(const std::vector<MemoryEvent>& events) : events_(events) {}
  const std::vector<MemoryEvent>& events() const { return events_; }
  Bytes at(size_t i);

 private:
  const std::vector<MemoryEvent>& events_;
  size_t next_ = 0;  // events_[0, next_) are summed in live_
  Bytes live_ = 0;
};

// The most bytes `events` (in any order; sorted here as above) hold at once,
// counted at the end of each instant, starting from nothing.
Bytes eventsPeak(std::vector<MemoryEvent>& events);
// The same of events already in that order.
Bytes sortedEventsPeak(const std::vector<MemoryEvent>& events);

// sortedEventsPeak(memoryEvents(allocations, filter)) without the events
// (two per allocation: 330 MB of a 10M-allocation run): allocations in
// time order (a Trace's) are swept with only the live ones' frees held.
Bytes allocationsPeak(const std::vector<Allocation>& allocations, const AllocationFilter& filter);

}  // namespace gcprof::advisor
