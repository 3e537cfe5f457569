// LiveBlocks against std::unordered_map on random insertions, lookups and
// removals: keys that collide (the same low bits), key 0, growth, removal
// in the middle of a probe chain.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "live_blocks.h"

using gcprof::RecordedAllocation;
using gcprof::inject::LiveBlocks;

namespace {

RecordedAllocation block(uint64_t key, int64_t n) {
  RecordedAllocation a;
  a.addr = key;
  a.bytes = n;
  return a;
}

}  // namespace

TEST(LiveBlocks, BehavesAsAMapUnderRandomUse) {
  std::mt19937_64 rng(7);
  LiveBlocks blocks;
  std::unordered_map<uint64_t, int64_t> want;
  for (int64_t n = 0; n < 200000; ++n) {
    // Few distinct keys, multiples of 4096 (as pages are), and 0.
    const uint64_t key = (rng() % 5000) * 4096;
    switch (rng() % 3) {
      case 0: {
        auto [a, fresh] = blocks.tryEmplace(key, block(key, n));
        auto [w, wfresh] = want.try_emplace(key, n);
        ASSERT_EQ(fresh, wfresh) << key;
        ASSERT_EQ(a->bytes, w->second) << key;
        break;
      }
      case 1: {
        RecordedAllocation* a = blocks.find(key);
        auto w = want.find(key);
        ASSERT_EQ(a != nullptr, w != want.end()) << key;
        if (a) {
          ASSERT_EQ(a->bytes, w->second) << key;
        }
        break;
      }
      default:
        blocks.erase(key);
        want.erase(key);
    }
    ASSERT_EQ(blocks.size(), want.size());
  }
  std::unordered_map<uint64_t, int64_t> seen;
  blocks.forEach([&](RecordedAllocation& a) { seen.emplace(a.addr, a.bytes); });
  EXPECT_EQ(seen, want);
  blocks.clear();
  EXPECT_TRUE(blocks.empty());
  EXPECT_EQ(blocks.find(0), nullptr);
}

TEST(LiveBlocks, GrowsPastItsFirstSlotsKeepingEveryBlock) {
  LiveBlocks blocks;
  for (uint64_t k = 1; k <= 100000; ++k) ASSERT_TRUE(blocks.tryEmplace(k << 20, block(k, int64_t(k))).second);
  for (uint64_t k = 1; k <= 100000; ++k) {
    RecordedAllocation* a = blocks.find(k << 20);
    ASSERT_NE(a, nullptr) << k;
    ASSERT_EQ(a->bytes, int64_t(k));
  }
  for (uint64_t k = 1; k <= 100000; k += 2) blocks.erase(k << 20);
  for (uint64_t k = 1; k <= 100000; ++k) ASSERT_EQ(blocks.find(k << 20) != nullptr, k % 2 == 0) << k;
}
