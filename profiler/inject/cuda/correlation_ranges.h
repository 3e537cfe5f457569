// What we learnt about a CUDA API call on its own thread, looked up later by
// its CUPTI correlation id when the activity records arrive on CUPTI's
// thread: the range open when a kernel was launched, and whether a memory
// call was already recorded by its callback (so its MEMORY2 record is not
// counted twice).
//
// A direct-mapped table of atomics: writers are the application's threads
// inside CUDA calls, so no lock and no allocation; a slot is overwritten by
// the id `slots` later, which only loses the range of a kernel whose record
// arrives after that many further API calls (counted as evicted).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace gcprof::inject::cuda {

class CorrelationRanges {
 public:
  // 2^18 slots x 16 bytes = 4 MiB: a quarter million API calls in flight.
  static constexpr size_t kDefaultSlots = size_t{1} << 18;

  explicit CorrelationRanges(size_t slots = kDefaultSlots);  // slots: a power of two

  void rememberLaunch(uint32_t correlation, uint64_t range);
  void rememberRecordedMemoryCall(uint32_t correlation);

  // The range open when `correlation` launched its kernel; 0 = none or unknown.
  uint64_t launchRange(uint32_t correlation);
  bool memoryCallRecorded(uint32_t correlation) const;

  // Lookups that found the slot taken by a later call.
  int64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }

 private:
  enum Flag : uint64_t { kLaunch = 1, kMemory = 2 };
  struct Slot {
    std::atomic<uint64_t> key{0};  // (correlation << 8) | flags; 0 = empty
    std::atomic<uint64_t> range{0};
  };
  void store(uint32_t correlation, uint64_t flags, uint64_t range);
  bool load(uint32_t correlation, uint64_t* flags, uint64_t* range) const;

  const size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int64_t> evicted_{0};
};

}  // namespace gcprof::inject::cuda
