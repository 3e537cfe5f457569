// Human-readable sizes, including the extremes a damaged trace or a
// hand-written plan can hold.
#include <gtest/gtest.h>

#include <climits>

#include "byte_text.h"

using gcprof::formatBytes;

TEST(ByteText, UnitsAndPrecision) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(-2048), "-2.00 KiB");
  EXPECT_EQ(formatBytes(int64_t{300} << 20), "300 MiB");
}

TEST(ByteText, ExtremesDoNotOverflow) {
  // -INT64_MIN overflowed once (UBSan) and printed "--9223372036854775808 B".
  EXPECT_EQ(formatBytes(INT64_MIN), "-8.00 EiB");
  EXPECT_EQ(formatBytes(INT64_MAX), "8.00 EiB");
}

// The CLI (advise's tables) and the GUI spell durations through this one
// function; they had two with different rules.
TEST(ByteText, Durations) {
  EXPECT_EQ(gcprof::formatDuration(850), "850 ns");
  EXPECT_EQ(gcprof::formatDuration(1250), "1.25 us");
  EXPECT_EQ(gcprof::formatDuration(12'300'000), "12.3 ms");
  EXPECT_EQ(gcprof::formatDuration(2'100'000'000), "2.10 s");
  EXPECT_EQ(gcprof::formatDuration(-4'000'000), "-4.00 ms");
  EXPECT_EQ(gcprof::formatDuration(static_cast<double>(INT64_MAX)), "9223372036.85 s");
}
