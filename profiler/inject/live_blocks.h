// The writer's live blocks, by addressKey (address_key.h): an open-addressing
// table (linear probing, keys apart from the blocks). std::unordered_map cost
// a node allocation per block and a pointer chase per lookup, 16% of the
// writer thread of a short-step job (bench/RESULTS.md, "Cost per module call").
// Single-threaded (the writer thread). Pointers into it are valid until the
// next insertion.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "trace.h"

namespace gcprof::inject {

class LiveBlocks {
 public:
  LiveBlocks() { allocate(kInitialSlots); }

  // The block at `key` and true when it was inserted as `a`; the block
  // already there and false otherwise.
  std::pair<RecordedAllocation*, bool> tryEmplace(uint64_t key, const RecordedAllocation& a) {
    if (key == 0) {
      if (has_zero_) return {&zero_, false};
      has_zero_ = true;
      zero_ = a;
      return {&zero_, true};
    }
    if (2 * (used_ + 1) > mask_ + 1) grow();
    size_t i = home(key);
    for (; keys_[i] != 0; i = (i + 1) & mask_)
      if (keys_[i] == key) return {&blocks_[i], false};
    keys_[i] = key;
    blocks_[i] = a;
    ++used_;
    return {&blocks_[i], true};
  }

  RecordedAllocation* find(uint64_t key) {
    if (key == 0) return has_zero_ ? &zero_ : nullptr;
    for (size_t i = home(key); keys_[i] != 0; i = (i + 1) & mask_)
      if (keys_[i] == key) return &blocks_[i];
    return nullptr;
  }

  void erase(uint64_t key) {
    if (key == 0) {
      has_zero_ = false;
      return;
    }
    size_t i = home(key);
    for (; keys_[i] != key; i = (i + 1) & mask_)
      if (keys_[i] == 0) return;
    // Shift back the entries after the hole that may not stay past it (no
    // tombstones: a lookup stops at the first empty slot).
    for (size_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const size_t h = home(keys_[j]);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      blocks_[i] = blocks_[j];
      i = j;
    }
    keys_[i] = 0;
    --used_;
  }

  template <typename F>
  void forEach(F f) {
    if (has_zero_) f(zero_);
    for (size_t i = 0; i <= mask_; ++i)
      if (keys_[i] != 0) f(blocks_[i]);
  }

  void clear() {
    allocate(kInitialSlots);
    has_zero_ = false;
  }
  bool empty() const { return size() == 0; }
  size_t size() const { return used_ + has_zero_; }  // the block at key 0 included

 private:
  static constexpr size_t kInitialSlots = 1024;

  // Fibonacci hashing: addresses are multiples of 16 or more, their low bits
  // alike; the product's high bits mix them all.
  size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_); }

  void allocate(size_t slots) {
    keys_ = std::make_unique<uint64_t[]>(slots);  // zeroed: empty
    blocks_ = std::make_unique<RecordedAllocation[]>(slots);
    mask_ = slots - 1;
    shift_ = 64 - __builtin_ctzll(slots);
    used_ = 0;
  }

  void grow() {
    std::unique_ptr<uint64_t[]> keys = std::move(keys_);
    std::unique_ptr<RecordedAllocation[]> blocks = std::move(blocks_);
    const size_t slots = mask_ + 1;
    allocate(2 * slots);
    for (size_t i = 0; i < slots; ++i) {
      if (keys[i] == 0) continue;
      size_t j = home(keys[i]);
      while (keys_[j] != 0) j = (j + 1) & mask_;
      keys_[j] = keys[i];
      blocks_[j] = blocks[i];
      ++used_;
    }
  }

  std::unique_ptr<uint64_t[]> keys_;  // 0 = empty slot
  std::unique_ptr<RecordedAllocation[]> blocks_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t used_ = 0;  // slots in use
  bool has_zero_ = false;
  RecordedAllocation zero_;  // the block at key 0, if any (0 marks an empty slot)
};

}  // namespace gcprof::inject
