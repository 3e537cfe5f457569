#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "correlation_ranges.h"

namespace gcprof::inject::cuda {
namespace {

TEST(CuptiCorrelationRanges, LaunchRangeByCorrelationId) {
  CorrelationRanges c(16);
  c.rememberLaunch(5, 77);
  c.rememberLaunch(6, 78);
  EXPECT_EQ(c.launchRange(5), 77u);
  EXPECT_EQ(c.launchRange(6), 78u);
  EXPECT_EQ(c.launchRange(7), 0u);  // launched outside every range
  EXPECT_EQ(c.evicted(), 0);
}

TEST(CuptiCorrelationRanges, OverwrittenSlotIsUnknownAndCounted) {
  CorrelationRanges c(16);
  c.rememberLaunch(5, 77);
  c.rememberLaunch(5 + 16, 99);  // same slot, later call
  EXPECT_EQ(c.launchRange(5), 0u);
  EXPECT_EQ(c.evicted(), 1);
  EXPECT_EQ(c.launchRange(21), 99u);
}

TEST(CuptiCorrelationRanges, MemoryCallsAreNotLaunches) {
  CorrelationRanges c(16);
  c.rememberRecordedMemoryCall(9);
  EXPECT_TRUE(c.memoryCallRecorded(9));
  EXPECT_FALSE(c.memoryCallRecorded(10));
  EXPECT_EQ(c.launchRange(9), 0u);
  c.rememberLaunch(10, 3);
  EXPECT_FALSE(c.memoryCallRecorded(10));
}

// Many threads launch while CUPTI's thread looks up: a lookup answers the
// range stored for exactly that id or nothing, never another call's range.
TEST(CuptiCorrelationRanges, ConcurrentLaunchesNeverMixUpRanges) {
  CorrelationRanges c(1024);
  std::atomic<uint32_t> next{1};
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < 3; ++t)
    launchers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        uint32_t id = next.fetch_add(1);
        c.rememberLaunch(id, uint64_t{id} * 3);  // the range is a function of the id
      }
    });
  std::thread reader([&] {
    while (!done.load()) {
      uint32_t upto = next.load();
      for (uint32_t id = upto > 2000 ? upto - 2000 : 1; id < upto; ++id) {
        uint64_t r = c.launchRange(id);
        if (r != 0 && r != uint64_t{id} * 3) wrong.fetch_add(1);
      }
    }
  });
  for (auto& t : launchers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace gcprof::inject::cuda
