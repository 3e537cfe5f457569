// The addresses of allocations we recorded and that are still live, so that a
// free is reported only for memory we reported allocating. Lock-striped (no
// global lock), fixed capacity in mmap'ed memory (no malloc inside malloc).
// Its entries are addressKey()s (address_key.h): host and device apart.
#pragma once

#include <atomic>
#include <cstdint>

namespace gcprof::inject {

class AddressSet {
 public:
  // false when the shard is full (the caller counts a dropped event).
  bool insert(uint64_t addr);
  // true when `addr` was present (and is now removed).
  bool erase(uint64_t addr);
  bool contains(uint64_t addr);
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  static constexpr int kShards = 256;
  static constexpr uint32_t kSlots = 8192;  // per shard: 2M addresses, 16 MiB in all
  struct Shard {
    std::atomic<bool> lock{false};
    uint32_t used = 0;
    uint64_t* slots = nullptr;  // 0 = empty
  };
  Shard& shard(uint64_t h) { return shards_[h >> 56]; }
  static bool reserve(Shard& s);

  Shard shards_[kShards];
  std::atomic<int64_t> size_{0};
};

AddressSet& liveAddresses();

}  // namespace gcprof::inject
