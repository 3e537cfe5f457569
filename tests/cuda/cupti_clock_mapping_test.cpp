#include <gtest/gtest.h>

#include "clock_mapping.h"

namespace gcprof::inject::cuda {
namespace {

TEST(CuptiClockMapping, HostClockIsTheIdentity) {
  ClockMapping clock;
  clock.useHostClock();
  clock.addSample(5, 1000);  // ignored: CUPTI already stamps with our clock
  EXPECT_EQ(clock.toHost(123456789), 123456789);
}

TEST(CuptiClockMapping, OffsetFromTheFirstSample) {
  // CUPTI on CLOCK_REALTIME (~1.7e18 ns), host on CLOCK_MONOTONIC (~uptime).
  ClockMapping clock;
  const uint64_t realtime = 1700000000000000000ull;
  clock.addSample(realtime, 5000000000);
  EXPECT_EQ(clock.toHost(realtime + 250), 5000000250);
  EXPECT_EQ(clock.toHost(realtime - 1000), 4999999000);  // records from before the sample
}

TEST(CuptiClockMapping, DriftBetweenSamplesASecondApart) {
  ClockMapping clock;
  clock.addSample(1000000000000ull, 0);
  // CUPTI's clock ran 100 ppm fast over 10 s.
  clock.addSample(1000000000000ull + 10001000000ull, 10000000000);
  EXPECT_NEAR(static_cast<double>(clock.toHost(1000000000000ull + 5000500000ull)), 5.0e9, 2.0);
}

TEST(CuptiClockMapping, CloseSamplesAndClockStepsDoNotBendTheMapping) {
  ClockMapping clock;
  clock.addSample(1000, 0);
  clock.addSample(1000 + 500, 1000);  // 0.5 us apart: read jitter, not drift
  EXPECT_EQ(clock.toHost(1000 + 2000000000ull), 2000000000);
  clock.addSample(1000 + 3000000000ull, 1000000000);  // wall clock stepped back 2 s
  EXPECT_EQ(clock.toHost(1000 + 2000000000ull), 2000000000);
}

TEST(CuptiClockMapping, UnknownTimestampStaysUnknown) {
  ClockMapping clock;
  clock.addSample(1000, 7);
  EXPECT_EQ(clock.toHost(0), 0);
}

}  // namespace
}  // namespace gcprof::inject::cuda
