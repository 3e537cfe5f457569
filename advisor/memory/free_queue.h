// The frees of the live allocations, soonest first, for a sweep in time
// order (sweepInstants, RecordedEvents, the GUI's stacked curve). A radix
// heap: nothing is pushed before the last time popped, so a free goes to
// the bucket of the highest bit in which its time differs from that time,
// and only the first bucket's frees are ever compared, when they are
// redistributed. std::priority_queue's sift-downs (two unpredictable
// branches a level, ~11 levels for the few thousand live blocks of a
// training step) were a fifth of `gcprof show` at 10M allocations.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

// Each free carries a `Payload` (its bytes, or its row).
template <class Payload>
class FreeQueue {
 public:
  bool empty() const { return nonempty_ == 0 && buckets_[64].empty(); }
  // `time` must not be before the last time popped.
  void push(Ns time, Payload payload) { add({keyOf(time), payload}); }
  // The soonest free's time (not empty).
  Ns topTime() const { return static_cast<Ns>(least_[first()] ^ kSign); }
  // Takes one of the soonest frees (not empty); returns its payload.
  Payload pop() {
    if (buckets_[0].empty()) redistribute(first());
    std::vector<Free>& at = buckets_[0];
    const Payload payload = at.back().payload;
    at.pop_back();
    if (at.empty()) nonempty_ &= ~uint64_t{1};
    return payload;
  }

 private:
  struct Free {
    uint64_t key;
    Payload payload;
  };
  // Times as unsigned keys in the same order.
  static constexpr uint64_t kSign = uint64_t{1} << 63;
  static uint64_t keyOf(Ns t) { return static_cast<uint64_t>(t) ^ kSign; }
  int bucketOf(uint64_t key) const { return key == last_ ? 0 : 64 - __builtin_clzll(key ^ last_); }
  // Bucket 64 (keys differing from last_ in the sign) has no bit of its own.
  int first() const { return nonempty_ ? __builtin_ctzll(nonempty_) : 64; }
  void add(const Free& f) {
    const int b = bucketOf(f.key);
    if (buckets_[b].empty() || f.key < least_[b]) least_[b] = f.key;
    buckets_[b].push_back(f);
    if (b < 64) nonempty_ |= uint64_t{1} << b;
  }
  // Bucket 0 is empty: the soonest frees (bucket b's least) become "now",
  // and bucket b's frees go to lower buckets relative to it.
  void redistribute(int b) {
    last_ = least_[b];
    std::vector<Free> moving;
    moving.swap(buckets_[b]);
    if (b < 64) nonempty_ &= ~(uint64_t{1} << b);
    for (const Free& f : moving) add(f);
    moving.clear();
    buckets_[b].swap(moving);  // its capacity is kept for the next frees
  }

  // Bucket 0: at last_; bucket b: differing from last_ first at bit b - 1.
  std::array<std::vector<Free>, 65> buckets_;
  std::array<uint64_t, 65> least_{};
  uint64_t last_ = 0;      // the key of the last time popped (at first, before any)
  uint64_t nonempty_ = 0;  // bit b: bucket b (under 64) holds frees
};

}  // namespace gcprof::advisor
