// The frees of the live allocations, soonest first, for a sweep in time
// order (sweepInstants). A radix heap: nothing is pushed before the last
// time popped, so a free goes to the bucket of the highest bit in which its
// time differs from that time, and only the first bucket's frees are ever
// compared, when they are redistributed. std::priority_queue's sift-downs
// (two unpredictable branches a level, ~11 levels for the few thousand live
// blocks of a training step) were a fifth of `gcprof show` at 10M allocations.
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
  bool empty() const { return nonempty_ == 0; }
  // `time` must not be negative, nor before the last time popped.
  void push(Ns time, Payload payload) {
    const uint64_t key = static_cast<uint64_t>(time);
    const int b = bucketOf(key);
    if (buckets_[b].empty() || key < least_[b]) least_[b] = key;
    buckets_[b].push_back({key, payload});
    nonempty_ |= uint64_t{1} << b;
  }
  // The soonest free's time (not empty).
  Ns topTime() const { return static_cast<Ns>(least_[first()]); }
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
  int bucketOf(uint64_t key) const { return key == last_ ? 0 : 64 - __builtin_clzll(key ^ last_); }
  int first() const { return __builtin_ctzll(nonempty_); }
  // Bucket 0 is empty: the soonest frees (bucket b's least) become "now",
  // and bucket b's frees go to lower buckets relative to it.
  void redistribute(int b) {
    last_ = least_[b];
    std::vector<Free> moving;
    moving.swap(buckets_[b]);
    nonempty_ &= ~(uint64_t{1} << b);
    for (const Free& f : moving) {
      const int to = bucketOf(f.key);
      if (buckets_[to].empty() || f.key < least_[to]) least_[to] = f.key;
      buckets_[to].push_back(f);
      nonempty_ |= uint64_t{1} << to;
    }
    moving.clear();
    buckets_[b].swap(moving);  // its capacity is kept for the next frees
  }

  // Bucket 0: at last_; bucket b: differing from last_ first at bit b - 1
  // (times are not negative: bit 63 never differs).
  std::array<std::vector<Free>, 64> buckets_;
  std::array<uint64_t, 64> least_{};
  uint64_t last_ = 0;
  uint64_t nonempty_ = 0;  // bit b: bucket b holds frees
};

}  // namespace gcprof::advisor
