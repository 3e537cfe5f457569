// The addresses of allocations we recorded and that are still live, so that a
// free is reported only for memory we reported allocating: device memory, and
// all memory of an attached job (recorder.cpp, matchesFreesHere; the writer
// matches the rest). Lock-striped (no
// global lock), no malloc inside malloc. Its entries are addressKey()s
// (address_key.h): host and device apart.
//
// Every recorded allocation and every free of one probes it, so its tables
// grow with what they hold: a shard starts at a few cache lines of one
// static block and doubles (mmap) as it fills. A job with a thousand blocks
// alive probes ~128 KiB, which stays in the caches and the TLB; 256 shards
// of 8,192 slots from the start (16 MiB) made nearly every probe a cache
// and TLB miss (~120 ns).
#pragma once

#include <atomic>
#include <cstdint>

namespace gcprof::inject {

class AddressSet {
 public:
  AddressSet() {
    for (int i = 0; i < kShards; ++i) shards_[i].slots = first_slots_ + i * kFirstSlots;
  }
  AddressSet(const AddressSet&) = delete;  // its shards point into itself
  AddressSet& operator=(const AddressSet&) = delete;

  // false when the shard is full (the caller counts a dropped event).
  bool insert(uint64_t addr);
  // true when `addr` was present (and is now removed).
  bool erase(uint64_t addr);
  bool contains(uint64_t addr);
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }
  // Bytes of slot tables in use, all shards (tests, docs/recording.md).
  uint64_t tableBytes();

  static constexpr int kShards = 256;
  static constexpr uint32_t kFirstSlots = 64;   // per shard, in first_slots_
  static constexpr uint32_t kMaxSlots = 8192;   // per shard: 2M addresses, 16 MiB in all

 private:
  struct Shard {
    std::atomic<bool> lock{false};
    uint32_t used = 0;
    uint32_t mask = kFirstSlots - 1;  // slots - 1
    uint64_t* slots = nullptr;        // 0 = empty; its part of first_slots_ until it grows
  };
  Shard& shard(uint64_t h) { return shards_[h >> 56]; }
  bool grow(Shard& s);

  Shard shards_[kShards];
  std::atomic<int64_t> size_{0};
  alignas(64) uint64_t first_slots_[kShards * kFirstSlots] = {};
};

AddressSet& liveAddresses();

}  // namespace gcprof::inject
