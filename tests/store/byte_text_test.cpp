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
