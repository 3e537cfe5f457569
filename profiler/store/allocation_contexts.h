// The streams and threads a run allocated on, each kept once. A run has
// millions of allocations but only a handful of (stream, thread) pairs: a
// loaded row names its pair by a 32-bit number into this table instead of
// holding two 64-bit values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gcprof {

// Where a block was allocated. Values are kept whole: a thread id is what the
// recorder saw (a kernel tid, or a pthread_t on some systems), a stream a
// CUPTI stream id or a cudaStream_t.
struct AllocationContext {
  int64_t stream = 0;
  int64_t thread = 0;
  bool operator==(const AllocationContext& o) const { return stream == o.stream && thread == o.thread; }
};

class AllocationContexts {
 public:
  // Entry 0 is a row's default context (stream 0, thread 0): a row built by
  // hand without a table reads as it did when it held the values itself.
  AllocationContexts() : contexts_{AllocationContext{}} { index_.emplace(AllocationContext{}, 0); }

  // The number of `c`, added when new. Throws std::length_error past 2^32
  // contexts (a run cannot have more than it has rows; no loadable one has
  // that many).
  uint32_t intern(const AllocationContext& c) {
    // Consecutive rows mostly share one: one comparison instead of a lookup.
    if (contexts_[last_] == c) return last_;
    return last_ = lookup(c);
  }

  const AllocationContext& operator[](uint32_t i) const { return contexts_[i]; }
  size_t size() const { return contexts_.size(); }

 private:
  struct Hash {
    size_t operator()(const AllocationContext& c) const {
      return static_cast<size_t>((static_cast<uint64_t>(c.stream) * 0x9e3779b97f4a7c15ull) ^
                                 static_cast<uint64_t>(c.thread));
    }
  };
  uint32_t lookup(const AllocationContext& c);

  std::vector<AllocationContext> contexts_;
  std::unordered_map<AllocationContext, uint32_t, Hash> index_;
  uint32_t last_ = 0;
};

}  // namespace gcprof
