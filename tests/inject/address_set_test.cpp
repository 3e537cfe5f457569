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
