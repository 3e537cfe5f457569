// Allocations as a time-ordered list of +bytes / -bytes events, the one
// ordering every memory computation of the advisor shares.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "memory/memory_curve.h"
#include "saturating.h"
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

// memoryEvents(allocations, filter), each event a 4-byte reference to its
// allocation row, whose time and bytes it reads, instead of a 16-byte copy:
// the recorded events that advise sorts once and every computation shares
// are 80 MB of a 10M-allocation run instead of 330. The rows must outlive it.
class RecordedEvents {
 public:
  // Throws AdviceError past 2^31 - 1 rows (a reference's bits).
  RecordedEvents(const std::vector<Allocation>& allocations, const AllocationFilter& filter);
  size_t size() const { return refs_.size(); }
  MemoryEvent operator[](size_t i) const { return of(refs_[i]); }
  Ns time(size_t i) const { return (*this)[i].time; }
  // How far ahead a walk event by event asks for rows (prefetch).
  static constexpr size_t kPrefetch = 16;
  // Asks for event i's row ahead of reading it (none past the end): a free's
  // row is far from its neighbours', a cache miss that a walk event by event
  // otherwise waits for.
  void prefetch(size_t i) const {
    if (i >= refs_.size()) return;
    const Allocation& a = (*rows_)[refs_[i] >> 1];
    __builtin_prefetch(&a.bytes);
    __builtin_prefetch(&a.free);
  }
  size_t firstAt(Ns t) const;     // the first event at t or later; size() if none
  size_t firstAfter(Ns t) const;  // the first event later than t; size() if none
  std::vector<MemoryEvent> copy() const;
  // sortedEventsPeak(*this), from the blocks' summaries.
  Bytes peak() const;

  // Runs of kBlock events, summarised so that a walk merging other events
  // in (the replay simulator, once per plan) passes each stretch with none
  // of its own at once instead of event by event.
  static constexpr size_t kBlock = 128;
  struct Block {
    Bytes sum = 0;       // of the block's deltas
    Bytes top = 0;       // the highest level at the end of an instant in it, above the level before it
    uint32_t top_at = 0; // the first event of the block at that level (index into the events)
    bool has_top = false;  // some instant ends in the block (one whose next event is later)
    bool small = false;    // every partial sum under kSafeSum in size: summed at once, nothing saturates
    // Its first event: a walk decides whether to pass the block, and passes
    // it, without reading that event's row (a cache miss per block and plan).
    MemoryEvent head;
    // Whether a walk at level `live` may add the block by its sum: the same
    // level as event by event, where neither could saturate.
    bool passableAt(Bytes live) const { return small && live > -kSafeSum && live < kSafeSum; }
  };
  // Sums of values under this (in size) cannot overflow when added.
  static constexpr Bytes kSafeSum = Bytes{1} << 61;
  // Block b: events [b * kBlock, (b + 1) * kBlock) (the last may be shorter).
  const Block& block(size_t b) const { return blocks_[b]; }

 private:
  void summarise();

  // Without a branch: whether an event is a free is as good as random in
  // time order, and the mispredicted branch was most of a walk's time.
  MemoryEvent of(uint32_t ref) const {
    const Allocation& a = (*rows_)[ref >> 1];
    const int64_t freed = -static_cast<int64_t>(ref & 1);  // all ones for a free
    return MemoryEvent{a.alloc ^ ((a.alloc ^ a.free) & freed), (a.bytes ^ freed) - freed};
  }
  const std::vector<Allocation>* rows_;
  std::vector<uint32_t> refs_;  // row << 1, | 1 for the row's free
  std::vector<Block> blocks_;
};

// stepPeaks(trace, memoryCurveOf(events, ...)) without the curve (two
// points per allocation): the same values from the events themselves.
std::vector<StepPeak> stepPeaksOf(const RecordedEvents& events, const std::vector<Step>& steps);

// The live bytes before events[i]: the sum of the deltas before it, walked
// on from the last question (callers ask in time order, step after step;
// summing from the start each time made a run of many steps quadratic).
class LevelBefore {
 public:
  explicit LevelBefore(const RecordedEvents& events) : events_(events) {}
  const RecordedEvents& events() const { return events_; }
  Bytes at(size_t i);

 private:
  const RecordedEvents& events_;
  size_t next_ = 0;  // events_[0, next_) are summed in live_
  Bytes live_ = 0;
};

// The most bytes `events` (in any order; sorted here as above) hold at once,
// counted at the end of each instant, starting from nothing.
Bytes eventsPeak(std::vector<MemoryEvent>& events);
// The same of events already in that order (a vector of them or RecordedEvents).
// RecordedEvents::prefetch where the events are those (a vector's are in
// order in memory already).
inline void prefetchEvent(const RecordedEvents& events, size_t i) { events.prefetch(i); }
inline void prefetchEvent(const std::vector<MemoryEvent>&, size_t) {}
template <class Events>
Bytes sortedEventsPeak(const Events& events) {
  Bytes live = 0, peak = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    prefetchEvent(events, i + RecordedEvents::kPrefetch);
    sat::addTo(live, events[i].delta);
    if (i + 1 == events.size() || events[i + 1].time != events[i].time) peak = std::max(peak, live);
  }
  return peak;
}

// sortedEventsPeak(memoryEvents(allocations, filter)) without the events
// (two per allocation: 330 MB of a 10M-allocation run): allocations in
// time order (a Trace's) are swept with only the live ones' frees held.
Bytes allocationsPeak(const std::vector<Allocation>& allocations, const AllocationFilter& filter);

}  // namespace gcprof::advisor
