// The live-address set agrees with std::set under heavy churn, including the
// wrap-around of backward-shift deletion.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "address_set.h"

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
