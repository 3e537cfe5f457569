#include "correlation_ranges.h"

namespace gcprof::inject::cuda {

CorrelationRanges::CorrelationRanges(size_t slots) : mask_(slots - 1), slots_(new Slot[slots]) {}

// Seqlock-like: the key is cleared while the range changes, so a reader that
// sees the same key before and after reading the range read a consistent pair.
void CorrelationRanges::store(uint32_t correlation, uint64_t flags, uint64_t range) {
  Slot& s = slots_[correlation & mask_];
  s.key.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.range.store(range, std::memory_order_relaxed);
  s.key.store((uint64_t{correlation} << 8) | flags, std::memory_order_release);
}

bool CorrelationRanges::load(uint32_t correlation, uint64_t* flags, uint64_t* range) const {
  const Slot& s = slots_[correlation & mask_];
  uint64_t k1 = s.key.load(std::memory_order_acquire);
  *range = s.range.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t k2 = s.key.load(std::memory_order_relaxed);
  if (k1 != k2 || k1 == 0 || (k1 >> 8) != correlation) return false;
  *flags = k1 & 0xff;
  return true;
}

void CorrelationRanges::rememberLaunch(uint32_t correlation, uint64_t range) {
  store(correlation, kLaunch, range);
}

void CorrelationRanges::rememberRecordedMemoryCall(uint32_t correlation) {
  store(correlation, kMemory, 0);
}

uint64_t CorrelationRanges::launchRange(uint32_t correlation) {
  uint64_t flags = 0, range = 0;
  if (!load(correlation, &flags, &range)) {
    // An empty slot means the launch had no open range (we only store
    // launches made inside one); a different id means it was overwritten.
    const Slot& s = slots_[correlation & mask_];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k != 0 && (k >> 8) > correlation) evicted_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  return (flags & kLaunch) ? range : 0;
}

bool CorrelationRanges::memoryCallRecorded(uint32_t correlation) const {
  uint64_t flags = 0, range = 0;
  return load(correlation, &flags, &range) && (flags & kMemory);
}

}  // namespace gcprof::inject::cuda
