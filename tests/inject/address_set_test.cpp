// The live-address set agrees with std::set under heavy churn, including the
// wrap-around of backward-shift deletion.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "address_set.h"
#include "recorder.h"
#include "recording_state.h"
#include "thread_state.h"

using gcprof::inject::AddressSet;

TEST(AddressSet, AgreesWithStdSetUnderChurn) {
  static AddressSet set;  // large: keep it off the stack
  std::set<uint64_t> model;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t addr = (rng() % 50000) * 16 + 0x10000;
    if (rng() % 2) {
      ASSERT_TRUE(set.insert(addr));
      model.insert(addr);
    } else {
      ASSERT_EQ(set.erase(addr), model.erase(addr) == 1) << i;
    }
  }
  for (uint64_t a : model) EXPECT_TRUE(set.erase(a));
  EXPECT_TRUE(set.empty());
}

TEST(AddressSet, EraseOfUnknownAddressIsFalse) {
  static AddressSet set;
  EXPECT_FALSE(set.erase(0x1234560));
  EXPECT_TRUE(set.insert(0x1234560));
  EXPECT_TRUE(set.erase(0x1234560));
  EXPECT_FALSE(set.erase(0x1234560));
}

// A host block and a device block at the same address (the two address
// spaces overlap) are two blocks to every table: each free finds its own.
TEST(AddressSet, HostAndDeviceBlocksAtOneAddressAreKeptApart) {
  using namespace gcprof::inject;
  recordingState().ready.store(true);
  const uint64_t addr = 0x7f0000100000;
  recordAlloc(addr, 1 << 20, 0, -1, 0, 0, true);
  recordAlloc(addr, 1 << 20, 20, 0, 0, 0, true);
  recordFree(addr, -1);
  recordFree(addr, 0);
  recordingState().ready.store(false);
  Event events[64];
  int allocs = 0, frees = 0;
  uint32_t n = threadState()->drain(events, 64);
  for (uint32_t i = 0; i < n; ++i) {
    allocs += events[i].type == EventType::Alloc;
    frees += events[i].type == EventType::Free;
  }
  EXPECT_EQ(allocs, 2);
  EXPECT_EQ(frees, 2) << "the device block's free was lost: it would stay live for ever";
}

// A caching allocator's segment and the first block carved from it share
// their address: the block's free must not close the segment, nor the other
// way round.
TEST(AddressSet, ASegmentAndItsFirstBlockAreKeptApart) {
  using namespace gcprof::inject;
  recordingState().ready.store(true);
  const uint64_t addr = 0x7f0000200000;
  recordAlloc(addr, 20 << 20, 25, 0, 0, 1, true);  // segment
  recordAlloc(addr, 1 << 20, 25, 0, 0, 0, true);   // its first tensor
  recordFree(addr, 0, 0, 0);
  recordFree(addr, 0, 0, 1);
  recordingState().ready.store(false);
  Event events[64];
  int allocs = 0, frees = 0;
  uint32_t n = threadState()->drain(events, 64);
  for (uint32_t i = 0; i < n; ++i) {
    allocs += events[i].type == EventType::Alloc;
    frees += events[i].type == EventType::Free && events[i].kind == (frees == 0 ? 0 : 1);
  }
  EXPECT_EQ(allocs, 2) << "the tensor at its segment's address was dropped";
  EXPECT_EQ(frees, 2);
}

// The attach baseline skips a block the allocator's tracker reported already.
TEST(AddressSet, ContainsSeesInsertedAddressesUntilErased) {
  static AddressSet set;
  EXPECT_FALSE(set.contains(0x1000));
  ASSERT_TRUE(set.insert(0x1000));
  EXPECT_TRUE(set.contains(0x1000));
  EXPECT_FALSE(set.contains(0x2000));
  ASSERT_TRUE(set.erase(0x1000));
  EXPECT_FALSE(set.contains(0x1000));
}

// Every recorded allocation and free probes the set: with a few thousand
// blocks alive its tables must stay small enough for the caches and the TLB
// (a 64 KiB table per shard from the start made most probes miss both).
TEST(AddressSet, TablesGrowWithWhatTheyHold) {
  static AddressSet set;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(set.insert(0x7f0000000000 + (rng() % (1 << 24)) * 64));
  EXPECT_LE(set.tableBytes(), 512u << 10);
}

// Growing keeps the capacity: 256 shards of 8,192 slots filled to 3/4.
TEST(AddressSet, HoldsAsManyBlocksAsEver) {
  static AddressSet set;
  int64_t held = 0;
  for (uint64_t i = 0; i < 2000000; ++i) held += set.insert(0x10000 + i * 16);
  EXPECT_EQ(held, int64_t{AddressSet::kShards} * AddressSet::kMaxSlots / 4 * 3);
  EXPECT_EQ(set.tableBytes(), uint64_t{AddressSet::kShards} * AddressSet::kMaxSlots * 8 +
                                  AddressSet::kShards * AddressSet::kFirstSlots * 8);
  for (uint64_t i = 0; i < 2000000; i += 997) {
    bool had = set.contains(0x10000 + i * 16);
    EXPECT_EQ(set.erase(0x10000 + i * 16), had);
  }
}
